# Two commands for a newcomer: `make run` and `make test`. Everything else is a helper of theirs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test test-fast test-deps lint bench bench-sync bench-sync-kube clean vendor

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

## setup: create .venv and install the pinned requirements (idempotent)
setup: $(STAMP)

## run: migrate, load the demo on a new database, create the local admin, serve on 127.0.0.1:8000 with
##      an in-process worker that keeps the simulated fleet moving. DEBUG=1 for the demo (plain HTTP, debug
##      pages); the settings' own default is off, and with it the static files are collected first (docs/deploy.md).
run: export DEBUG ?= 1
run: setup
	$(PY) manage.py migrate --noinput
	@if [ "$$DEBUG" != 1 ]; then $(PY) manage.py collectstatic --noinput --verbosity 0; fi
	$(PY) manage.py bootstrap
	@echo "Serving on http://127.0.0.1:8000 (Ctrl-C stops; the worker's log is var/worker.log)"
	@trap 'kill 0' EXIT INT TERM; \
	  $(PY) manage.py runworker >var/worker.log 2>&1 & \
	  $(PY) manage.py runserver 127.0.0.1:8000

## test: the whole test suite, on TEST_WORKERS processes at once (pytest-xdist; each its own test database).
##      DATABASE_URL=postgres://... runs it on PostgreSQL; TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: setup test-deps
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal

## test-fast: the tests of pure logic and of one process (engine, fleet, telemetry, layers, catalogue), in a minute
##      or two: no browser, no cluster, no live server
test-fast: setup
	$(PY) -m pytest -n $(TEST_WORKERS) tests/engine tests/fleet tests/telemetry tests/test_architecture.py \
	  tests/test_catalogue.py tests/test_gate.py tests/test_document_fields.py tests/test_config_limits.py

## test-deps: the real parts the integration tests drive: kube-apiserver (built once, cached), kubectl, Chromium, the
##      OpenID provider, axe-core and Prometheus. If one cannot be installed here its tests skip with the reason (CI requires them).
test-deps:
	-bash scripts/kube-apiserver.sh build
	-$(MAKE) --no-print-directory kubectl-deps
	-$(MAKE) --no-print-directory sign-in-deps
	-$(MAKE) --no-print-directory browser-deps
	-$(MAKE) --no-print-directory prometheus-deps

lint: setup
	$(VENV)/bin/ruff check .
	$(PY) manage.py check

## bench: the benchmarks of docs/performance.md (bench-sync needs the PostgreSQL on 127.0.0.1)
bench: setup
	$(PY) scripts/bench_engine.py
	$(PY) scripts/bench_sync.py

bench-sync: setup
	$(PY) scripts/bench_sync.py

## bench-sync-kube: the same runs against the real kube-apiserver at reduced size (scripts/kube-apiserver.sh build)
bench-sync-kube: setup
	$(PY) scripts/bench_sync.py --apiserver kube

## bench-clusters: four 5,000-node clusters synced and watched by two Celery workers (PostgreSQL and Redis on
##      127.0.0.1; about 5 minutes and 10 GB): the first sync of all four, the pool list while all four stream
##      pod events (docs/operations.md)
.PHONY: bench-clusters
bench-clusters: setup
	$(PY) scripts/bench_clusters.py

## vendor: refresh the browser libraries in static/vendor/ from npm (package.json pins them; the copies are committed)
vendor:
	npm ci --no-audit --no-fund
	mkdir -p static/vendor
	cp node_modules/htmx.org/dist/htmx.min.js static/vendor/htmx.min.js
	cp node_modules/uplot/dist/uPlot.iife.min.js static/vendor/uPlot.iife.min.js
	cp node_modules/uplot/dist/uPlot.min.css static/vendor/uPlot.min.css
	cp node_modules/uplot/LICENSE static/vendor/uPlot.LICENSE
	cp node_modules/htmx.org/LICENSE static/vendor/htmx.LICENSE

## sign-in-deps: what the sign-in tests need on a fresh machine: Chromium (Debian package) and the test
##      OpenID provider (tests/oidc, installed from its package-lock.json)
.PHONY: sign-in-deps
OIDC_PROVIDER := tests/oidc/node_modules/.package-lock.json
$(OIDC_PROVIDER): tests/oidc/package-lock.json
	npm ci --prefix tests/oidc --no-audit --no-fund
sign-in-deps: $(OIDC_PROVIDER)
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

## kubectl-deps: the kubectl users type, for the tests that drive the cluster with it: the one on the machine,
##      else Debian's kubernetes-client
.PHONY: kubectl-deps
kubectl-deps:
	command -v kubectl >/dev/null || (apt-get update && apt-get install -y kubernetes-client)

## prometheus-deps: Debian's prometheus, for the tests and the benchmark that put a real Prometheus in front of the
##      simulated DCGM exporter (each starts its own on a free loopback port with its data under tmp). The package's
##      own service is stopped and disabled right after the install, so nothing is left listening on :9090.
.PHONY: prometheus-deps
prometheus-deps:
	command -v prometheus >/dev/null || ( \
	  apt-get update && apt-get install -y --no-install-recommends prometheus && \
	  { systemctl disable --now prometheus.service 2>/dev/null; service prometheus stop 2>/dev/null; true; } )

## browser-deps: the browser libraries of package.json in node_modules/, for axe-core: the browser tests inject
##      it into every page they open to check WCAG 2 A and AA (installed from package-lock.json)
.PHONY: browser-deps
BROWSER_LIBRARIES := node_modules/.package-lock.json
$(BROWSER_LIBRARIES): package-lock.json
	npm ci --no-audit --no-fund
browser-deps: $(BROWSER_LIBRARIES)

clean:
	rm -rf var/db.sqlite3 .pytest_cache .hypothesis
