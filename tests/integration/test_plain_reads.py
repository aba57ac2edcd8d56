"""A resync reads changed objects on plain connections made from the client's configuration: against the real
kube-apiserver that is HTTPS verified against the kubeconfig's CA, with its bearer token, and a refused token
or an unverifiable server fails the read as the client would."""

from __future__ import annotations

import pytest

from pools.inventory.records import InventoryError
from pools.inventory.sources import KubernetesSource, PlainReads


def test_reads_go_out_on_plain_https_connections_with_the_kubeconfigs_ca_and_token(kube):
    kube.add_node("h100-1")
    kube.add_pod("train-1", node="h100-1", gpu=2, pool="train")
    source = KubernetesSource(kubeconfig=kube.kubeconfig)
    plain = PlainReads.for_client(source.api.api_client, source.request_timeout)
    assert plain is not None and plain.context is not None and plain.context.check_hostname

    with source.object_reads() as reads:
        assert reads.plain is not None
        reads.add(["h100-1", "no-such-node"], [("default", "train-1"), ("default", "no-such-pod")])
        inventory = reads.result()

    assert [n["metadata"]["name"] for n in inventory.nodes] == ["h100-1"]
    assert [p["metadata"]["name"] for p in inventory.pods] == ["train-1"]
    assert inventory.pods[0]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "2"


def test_a_refused_token_and_an_unknown_ca_fail_the_read(kube):
    kube.add_node("h100-1")
    source = KubernetesSource(kubeconfig=kube.kubeconfig)
    client = source.api.api_client

    refused = PlainReads.for_client(client)
    refused.headers = {**refused.headers, "authorization": "Bearer not-the-token"}
    with pytest.raises(InventoryError, match="HTTP 401"):
        refused.get("reading node h100-1", "/api/v1/nodes/h100-1")

    configuration = client.configuration
    configuration.refresh_api_key_hook = None  # it would load the kubeconfig's CA back in
    configuration.ssl_ca_cert = configuration.ca_cert_data = None  # the system's CAs only
    with pytest.raises(InventoryError, match="CERTIFICATE_VERIFY_FAILED"):
        PlainReads.for_client(client).get("reading node h100-1", "/api/v1/nodes/h100-1")
