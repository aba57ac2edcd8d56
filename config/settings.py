"""Settings, read from the environment.

Every value has an embedded default so that `make run` works on a fresh machine: SQLite under ``var/``,
Celery tasks run in-process, a development secret key generated once and kept in ``var/``. ``DEBUG`` is
off unless the environment turns it on (``make run`` does, for the demo): a deployment that forgets it
gets HTTPS-only cookies and no debug pages.
"""

import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean environment variable: 1/true/yes/on are true, anything else false."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def development_secret_key() -> str:
    """A secret key generated on first use and kept in var/, so sessions survive restarts."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = os.environ.get("SECRET_KEY") or development_secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

INSTALLED_APPS = [
    "accounts.apps.ConsoleAdminConfig",  # django.contrib.admin with the console's admin site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "guardian",
    "django_htmx",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "mozilla_django_oidc",
    "axes",
    "pools",
    "accounts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files, before anything that could answer them
    "pools.middleware.RequestLimitsMiddleware",
    "pools.middleware.StatementCapMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    "pools.middleware.NotFoundPageMiddleware",  # the console's 404 page with DEBUG on too
    "axes.middleware.AxesMiddleware",  # last: turns a refused sign-in into the lockout answer
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Watches, sync and the web server share the file. WAL lets readers go on during a write; IMMEDIATE
    # transactions take the write lock up front, so a writer waits (up to the timeout) instead of failing
    # when a read transaction would have to become a write one.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=20,
        transaction_mode="IMMEDIATE",
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    )
    # Tests run watchers on threads: a file database (not the shared in-memory one, whose table locks
    # ignore the timeout) behaves like the real one.
    # One file per test process, so that test runs side by side do not share it.
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(tempfile.gettempdir(), f"gpupool-test-{os.getpid()}.sqlite3")}
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A PostgreSQL that hangs (paused, a full disk, a network partition) must not hang every request and task:
    # a connection not made within DB_CONNECT_TIMEOUT seconds fails (the request answers 503, a worker retries),
    # and no statement runs longer than DB_STATEMENT_TIMEOUT_MS (requests have their own, shorter cap:
    # GPUPOOL["STATEMENT_TIMEOUT_MS"]). Keepalives notice a peer that went away under an idle connection.
    _db_options = DATABASES["default"].setdefault("OPTIONS", {})
    _db_options.setdefault("connect_timeout", int(os.environ.get("DB_CONNECT_TIMEOUT", "3")))
    _db_options.setdefault(
        "options", f"-c statement_timeout={int(os.environ.get('DB_STATEMENT_TIMEOUT_MS', '300000'))}"
    )
    _db_options.setdefault("keepalives", 1)
    _db_options.setdefault("keepalives_idle", 30)
    _db_options.setdefault("keepalives_interval", 10)
    _db_options.setdefault("keepalives_count", 3)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out sign-in before any password is checked
    "accounts.backends.KeycloakBackend",
    "accounts.backends.LocalLoginBackend",
    "accounts.backends.RolePermissionBackend",
    "guardian.backends.ObjectPermissionBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Static files (docs/deploy.md). `collectstatic` writes them to STATIC_ROOT under content-hashed names with gzipped
# copies, and WhiteNoise serves them from the web process: hashed names for ten years ("immutable"),
# anything else a minute. A container image collects them at build time into a STATIC_ROOT outside VAR_DIR,
# which is a writable volume there. With DEBUG on, pages link the plain names and WhiteNoise serves them from
# the source folders as they change, so `make run` needs no collectstatic.
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or VAR_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# Identity (docs/keycloak.md). Keycloak is used when KEYCLOAK_URL, KEYCLOAK_REALM and OIDC_RP_CLIENT_ID
# are set; endpoints come from the realm's discovery document unless set here. Local passwords work
# without Keycloak, and with it only when LOCAL_LOGIN=1.
KEYCLOAK_URL = os.environ.get("KEYCLOAK_URL", "").rstrip("/")
KEYCLOAK_REALM = os.environ.get("KEYCLOAK_REALM", "")
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "openid email profile")
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_OP_ISSUER = os.environ.get("OIDC_OP_ISSUER", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "")
OIDC_OP_LOGOUT_ENDPOINT = os.environ.get("OIDC_OP_LOGOUT_ENDPOINT", "")
OIDC_VERIFY_SSL = env_bool("OIDC_VERIFY_SSL", True)
OIDC_TIMEOUT = 10
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of the provider's end-session endpoint
# Every sign-in carries a state and a nonce (both kept in the session and required back) and PKCE (S256), so
# a code works only for the browser session that asked for it.
OIDC_USE_NONCE = True
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_AUTHENTICATE_CLASS = "accounts.oidc.KeycloakAuthenticationRequestView"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?failed=1"
LOCAL_LOGIN = env_bool("LOCAL_LOGIN", True) if "LOCAL_LOGIN" in os.environ else None

# Password sign-ins are throttled by django-axes (accounts/throttling.py): after LOGIN_FAILURE_LIMIT wrong
# passwords for one username from one address, that pair is refused (429) for LOGIN_COOLOFF_MINUTES, the right
# password included. Failures are kept in the database, so every web process sees them; a success clears them.
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Attempts during a lockout are refused without being counted: the cool-off runs from the last counted failure.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_WHITELIST_CALLABLE = "accounts.throttling.not_a_password_attempt"
AXES_LOCKOUT_CALLABLE = "accounts.throttling.locked_out_response"
AXES_DISABLE_ACCESS_LOG = True  # sign-ins are recorded elsewhere (last_login, ExternalIdentity)
AXES_VERBOSE = False  # no start-up banner on every manage.py and poolctl command

# Every answer carries a Content-Security-Policy (django-csp, SEMANTICS §7.4): scripts only from the console's own
# files (no inline script, no eval), nothing loaded from elsewhere, no framing. Styles may be inline (the pages'
# bars, the charts' and Redoc's generated styles); Redoc's workers start from blob: URLs.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Production (DEBUG=0): HTTPS only, secure cookies, HSTS. Behind a TLS-terminating proxy set
# SECURE_PROXY_SSL_HEADER=1 so Django trusts its X-Forwarded-Proto.
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # The kubelet probes pods over plain HTTP and would follow the redirect to a port that speaks none.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    if env_bool("SECURE_PROXY_SSL_HEADER", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Celery: without a broker every task runs eagerly in this process (the embedded default).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# A worker reserves one message per process beyond what it runs; with the long tasks acknowledged when they
# end (pools.tasks.LONG_TASK), none while all its processes sync or watch.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A broker (Redis) that goes away and comes back: the worker reconnects for as long as it takes, at start-up
# too, instead of exiting; connections notice a dead peer (health checks, keepalives) and fail fast when the
# broker refuses them (docs/operations.md, "Faults"). Running tasks go on while it reconnects: the leases keep
# a redelivered sync or watch from running twice.
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_CONNECTION_TIMEOUT = float(os.environ.get("CELERY_BROKER_CONNECTION_TIMEOUT", "3"))
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 3,
    "socket_timeout": 30,
    "socket_keepalive": True,
    "health_check_interval": 10,
    "retry_on_timeout": True,
}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 3
CELERY_REDIS_SOCKET_TIMEOUT = 30
CELERY_REDIS_RETRY_ON_TIMEOUT = True
CELERY_REDIS_BACKEND_HEALTH_CHECK_INTERVAL = 10
CELERY_BEAT_SCHEDULE = {
    "sync-all-backends": {
        "task": "pools.tasks.sync_all_backends",
        "schedule": float(os.environ.get("GPUPOOL_SYNC_SECONDS", "30")),
    },
    "record-usage": {"task": "pools.tasks.record_usage", "schedule": 60.0},
    "compact-usage-history": {"task": "pools.tasks.compact_usage_history", "schedule": 3600.0},
    "record-utilization": {
        "task": "pools.tasks.record_utilization",
        "schedule": float(os.environ.get("GPUPOOL_UTILIZATION_SECONDS", "60")),
    },
    # A watch of every live (kubernetes, simulated) backend nobody watches: re-started this long after one ends.
    "watch-backends": {
        "task": "pools.tasks.watch_all_backends",
        "schedule": float(os.environ.get("GPUPOOL_WATCH_SECONDS", "30")),
    },
}

REST_FRAMEWORK = {
    # A bearer scheme first: DRF takes the challenge of a 401 from the first class, so a call without
    # (or with a bad) credential answers 401 with WWW-Authenticate: Bearer realm="api"; session
    # authentication has no challenge and would turn that into a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiTokenAuthentication",
        "accounts.authentication.KeycloakBearerAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "pools.api.schema.ApiAutoSchema",
    "EXCEPTION_HANDLER": "pools.api.errors.exception_handler",
}

# The API's OpenAPI schema (/api/schema/), with Swagger UI and Redoc served from the sidecar package (no CDN).
SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Pool Console API",
    "DESCRIPTION": "Pools, platforms, pod templates, resource validations, roles, inventory and config history.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/",
    "PREPROCESSING_HOOKS": ["pools.api.schema.api_paths_only"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One name for the placement strategies (pools.choices.PlacementStrategy.values), wherever a field takes one:
    # a pool body, a node-pools row (tests/test_node_pools.py checks the two lists agree).
    "ENUM_NAME_OVERRIDES": {
        "PlacementStrategyEnum": ["binpack", "spread"],
        "StartEnum": "pools.api.serializers.START_CHOICES",  # a node's start and the check's starts
        "BackendKindEnum": "pools.choices.BackendKind",
        "MemberKindEnum": ["user", "group", "service_account"],
        "UnitKindEnum": ["department", "project"],  # a unit's kind, and whose limit a request exceeds
    },
}

# The only directory `file` backends (and simulated backends' blueprints) may read inventories from; the demo
# writes its blueprints below it (SEMANTICS §7.3).
GPUPOOL_INVENTORY_DIR = Path(os.environ.get("GPUPOOL_INVENTORY_DIR") or VAR_DIR / "inventory")
# The only directory `kubernetes` backends' kubeconfig files may be read from (SEMANTICS §7.4).
GPUPOOL_KUBECONFIG_DIR = Path(os.environ.get("GPUPOOL_KUBECONFIG_DIR") or VAR_DIR / "kubeconfig")

# Pool semantics that are deployment settings rather than per-object config (SEMANTICS.md §6).
GPUPOOL = {
    # A pool is ONLINE while its backend's last successful contact is younger than this.
    "ONLINE_WINDOW_SECONDS": int(os.environ.get("GPUPOOL_ONLINE_WINDOW_SECONDS", "120")),
    # A GPU a pod holds is idle once its utilization stayed at or below this many % for this many seconds
    # (Run:ai's defaults: 0 % for 5 minutes).
    "IDLE_THRESHOLD_PERCENT": float(os.environ.get("GPUPOOL_IDLE_THRESHOLD_PERCENT", "0")),
    "IDLE_SECONDS": float(os.environ.get("GPUPOOL_IDLE_SECONDS", "300")),
    # How often every backend's GPU utilization is read (the rounds of pools.services.utilization).
    "UTILIZATION_SECONDS": float(os.environ.get("GPUPOOL_UTILIZATION_SECONDS", "60")),
    # How long one Celery task ``watch_backend`` watches its backend before it returns (beat starts the next).
    "WATCH_TASK_SECONDS": float(os.environ.get("GPUPOOL_WATCH_TASK_SECONDS", "300")),
    # Send each backend's sync and watch tasks to the queue ``backend-<name>`` rather than the default one.
    "BACKEND_QUEUES": env_bool("GPUPOOL_BACKEND_QUEUES", False),
    # How much lower a Celery worker's CPU priority is than the processes that start it (``nice``): where the
    # workers share CPUs with the web server, streaming clusters leave the pages their share (0: the same).
    "WORKER_NICE": int(os.environ.get("GPUPOOL_WORKER_NICE", "10")),
    # A sync's lease on its backend, renewed every third of it while the sync runs: a killed worker's backend is
    # free again this long after it died.
    "SYNC_LEASE_SECONDS": float(os.environ.get("GPUPOOL_SYNC_LEASE_SECONDS", "30")),
    # The longest a request handler's SQL statement may run on PostgreSQL before it is stopped (a 503).
    "STATEMENT_TIMEOUT_MS": int(os.environ.get("GPUPOOL_STATEMENT_TIMEOUT_MS", "5000")),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # axes: failures and lockouts (WARNING) are kept; its INFO lines on every sign-in are not.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
