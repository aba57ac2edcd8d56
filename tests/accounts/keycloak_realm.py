"""The Keycloak realm the sign-in tests are laid out like (docs/keycloak.md), and the pools its teams use."""

POOLS = ["team-a", "team-a-gpu", "team-b"]
CLIENT_ID, CLIENT_SECRET, REALM = "gpupool-console", "test-client-secret", "gpupool"
# The realm's users, as in docs/keycloak.md: alice administers, bob is on team A, carol is in no group.
REALM_USERS = {
    "alice": {"sub": "f3d1c0de-0001", "groups": ["/gpu-admins"], "given_name": "Alice", "family_name": "Admin"},
    "bob": {"sub": "f3d1c0de-0002", "groups": ["/team-a"], "given_name": "Bob", "family_name": "Builder"},
    "carol": {"sub": "f3d1c0de-0003", "groups": [], "given_name": "Carol", "family_name": "Cook"},
}
