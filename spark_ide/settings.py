"""Django settings, all read from the environment (see the README's configuration table)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url

from spark_ide.editing.paths import MAX_PATH_LENGTH
from spark_ide.env import ConfigError, envbool, envchoice, envint, envlist, envmoney, envstr, secret_key
from spark_ide.live.run_report import MIN_BUDGET, RUN_OUTPUT_TO_MODEL
from spark_ide.live.steps import MOST_MS
from spark_ide.ops.multiproc import configure as metrics_directory
from spark_ide.upstream.dialects import edit_style_from
from spark_ide.upstream.errors import ConfigError as UpstreamConfigError

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(envstr("SPARK_DATA_DIR", str(BASE_DIR / "var")))
PRODUCTION = envstr("SPARK_ENV", "local") == "production"

SECRET_KEY = secret_key(DATA_DIR, production=PRODUCTION)
# People's stored provider keys (accounts.keyring) are encrypted with a key derived from this
# secret, or from SECRET_KEY when it is unset; secrets used before, still accepted for reading
# until ``manage.py spark_rotate_keys`` has re-encrypted every stored key (docs/security.md).
SPARK_KEYS_SECRET = envstr("SPARK_KEYS_SECRET", "")
SPARK_KEYS_OLD_SECRETS = envlist("SPARK_KEYS_OLD_SECRETS", [])
if any(0 < len(secret) < 32 for secret in (SPARK_KEYS_SECRET, *SPARK_KEYS_OLD_SECRETS)):
    raise ConfigError("SPARK_KEYS_SECRET and each of SPARK_KEYS_OLD_SECRETS must be at least 32 characters")
DEBUG = envbool("SPARK_DEBUG", False)
ALLOWED_HOSTS = envlist("SPARK_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = envlist("SPARK_CSRF_TRUSTED_ORIGINS", [])
SITE_URL = envstr("SPARK_SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "spark_ide.accounts",
    "spark_ide.workspaces",
    "spark_ide.pairing",
    "spark_ide.replay",
    "spark_ide.ops",
    "spark_ide.classroom",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "spark_ide.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "spark_ide.accounts.middleware.LoginTokenMiddleware",
    "spark_ide.accounts.guests.GuestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "spark_ide.urls"
ASGI_APPLICATION = "spark_ide.asgi.application"

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

# Storage: SQLite in WAL mode by default (readers never block the writer), or DATABASE_URL.
_DEFAULT_DB = f"sqlite:///{DATA_DIR / 'spark.sqlite3'}"
DATABASES: dict[str, dict[str, Any]] = {
    # A kept connection is checked before it is reused: after a database restart every thread's
    # connection is broken, and the first query on each would otherwise fail.
    "default": dict(
        dj_database_url.parse(envstr("DATABASE_URL", _DEFAULT_DB), conn_max_age=60, conn_health_checks=True)
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Persistent: closing a SQLite connection checkpoints the WAL, which made every
    # persisted document update cost ~40 ms (measured by the pairing benchmark).
    DATABASES["default"]["CONN_MAX_AGE"] = None
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Channels and Celery: Redis when REDIS_URL is set (several processes), else in-process.
REDIS_URL = envstr("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
else:
    # A run's output comes through the layer as many messages: room for them (the default
    # capacity, 100, drops group messages silently once a channel is full).
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 10_000}}}
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
    # Eager: tasks run in the caller's thread; async callers wrap them in sync_to_async so
    # they never run on the event loop.
    CELERY_TASK_ALWAYS_EAGER = True
# Rooms shared by several processes (spark_ide.live.owner, live.replica): each room owned by one process
# under a lease in Redis, the others forwarding to it. On whenever Redis is there.
SPARK_CLUSTER = bool(REDIS_URL) and envbool("SPARK_CLUSTER", True)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_SERIALIZER = "json"
# The sandbox is no Django app (no models): name its task module so workers import it.
CELERY_IMPORTS = ["spark_ide.sandbox.tasks", "spark_ide.pairing.guard"]
# A task past this is killed with its pool process (a code run's jail dies with its parent);
# a pool process is replaced after this many tasks, so no leak outlives a few hundred runs.
CELERY_TASK_TIME_LIMIT = 300
CELERY_WORKER_MAX_TASKS_PER_CHILD = 200

# The security watchdog (spark_ide.guard, live.watchdog, docs/guard.md): the severity from which a
# model's finding halts the stream (in a workspace whose mode is halt), and how many automatic
# corrections a turn may have before the model is stopped instead.
SPARK_GUARD_HALT_SEVERITY = envstr("SPARK_GUARD_HALT_SEVERITY", "high")
SPARK_GUARD_MAX_CORRECTIONS = envint("SPARK_GUARD_MAX_CORRECTIONS", 2)
SPARK_GUARD_SCAN_TIMEOUT_S = envint("SPARK_GUARD_SCAN_TIMEOUT_S", 60)

# Code runs (spark_ide.sandbox, docs/sandbox.md): limits per run, the student runtime, and the
# uids reserved for runs (one each, when the worker is root).
SPARK_SANDBOX_CPU_S = envint("SPARK_SANDBOX_CPU_S", 10)
SPARK_SANDBOX_WALL_S = envint("SPARK_SANDBOX_WALL_S", 15)
SPARK_SANDBOX_MEMORY_MB = envint("SPARK_SANDBOX_MEMORY_MB", 256)
SPARK_SANDBOX_PROCESSES = envint("SPARK_SANDBOX_PROCESSES", 64)
SPARK_SANDBOX_FILE_BYTES = envint("SPARK_SANDBOX_FILE_BYTES", 1048576)
SPARK_SANDBOX_OPEN_FILES = envint("SPARK_SANDBOX_OPEN_FILES", 64)
SPARK_SANDBOX_OUTPUT_BYTES = envint("SPARK_SANDBOX_OUTPUT_BYTES", 65536)
SPARK_SANDBOX_DISK_MB = envint("SPARK_SANDBOX_DISK_MB", 32)
SPARK_SANDBOX_PYTHON = envstr("SPARK_SANDBOX_PYTHON", "/usr/bin/python3")
SPARK_SANDBOX_UID_FIRST = envint("SPARK_SANDBOX_UID_FIRST", 61000)
SPARK_SANDBOX_UID_COUNT = envint("SPARK_SANDBOX_UID_COUNT", 1000)
SPARK_SANDBOX_ALLOW_UNSANDBOXED = envbool("SPARK_SANDBOX_ALLOW_UNSANDBOXED", False)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "workspace-list"
LOGOUT_REDIRECT_URL = "login"

# Behind TLS (SPARK_TLS=1; by default when SPARK_SITE_URL is https): the session and CSRF cookies
# are Secure, so a browser never sends them over plain HTTP. The deployments put nginx in front,
# which sets X-Forwarded-Proto itself (deploy/nginx/snippets): Django trusts it there, to know a
# request came over https (CSRF's origin check, the page's wss: socket in its CSP).
# (Empty counts as unset: docker-compose passes SPARK_TLS through as "" when it is not given.)
_HTTPS_SITE = SITE_URL.startswith("https://")
SPARK_TLS = envbool("SPARK_TLS", _HTTPS_SITE) if envstr("SPARK_TLS", "").strip() else _HTTPS_SITE
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = SPARK_TLS
CSRF_COOKIE_SECURE = SPARK_TLS
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if PRODUCTION or SPARK_TLS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on a missing root

# Limits (bad input gets a clear error, see docs/protocol.md).
SPARK_MAX_FILE_BYTES = envint("SPARK_MAX_FILE_BYTES", 1024 * 1024)
SPARK_MAX_PATH_LENGTH = envint("SPARK_MAX_PATH_LENGTH", MAX_PATH_LENGTH)
SPARK_MAX_WORKSPACE_FILES = envint("SPARK_MAX_WORKSPACE_FILES", 2000)
SPARK_MAX_IMPORT_BYTES = envint("SPARK_MAX_IMPORT_BYTES", 50 * 1024 * 1024)
SPARK_LOGIN_TOKEN_TTL_S = envint("SPARK_LOGIN_TOKEN_TTL_S", 24 * 3600)
SPARK_TEACHER_SIGNUP = envbool("SPARK_TEACHER_SIGNUP", False)  # /classroom/signup/ makes teacher accounts
DATA_UPLOAD_MAX_MEMORY_SIZE = SPARK_MAX_FILE_BYTES + 64 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every record written is scrubbed of bearer credentials and of people's stored provider keys.
    "filters": {"redact": {"()": "spark_ide.logsafe.RedactBearer"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact"]}},
    "root": {"handlers": ["console"], "level": envstr("SPARK_LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
CSRF_FAILURE_VIEW = "spark_ide.api.csrf_failure"

# The model (docs/upstream.md): SPARK_PROVIDER, OPENAI_BASE_URL, OPENAI_API_KEY, SPARK_MODEL are
# read by the upstream client itself, as are its limits on waiting for the model (the turn fails
# with a reason saying which): SPARK_UPSTREAM_CONNECT_S (10), SPARK_UPSTREAM_CONNECT_TRIES (5),
# SPARK_UPSTREAM_FIRST_BYTE_S (60), SPARK_UPSTREAM_STALL_S (120). What the IDE asks of the model:
# The model catalogue (docs/models.md): several models at once, from this TOML file, else from
# <SPARK_DATA_DIR>/models.toml when there is one; without one, these variables define the one model.
SPARK_MODELS_FILE = envstr("SPARK_MODELS_FILE", "")
_PROVIDER = envstr("SPARK_PROVIDER", "local") or "local"
_MODEL = envstr("SPARK_MODEL", "") or ("smollm2" if _PROVIDER == "local" else "")
_SMALL_LOCAL_MODEL = _PROVIDER == "local" and _MODEL == "smollm2"
# The edit dialect (docs/upstream.md, "Edit dialects"): apply-patch (the openai provider's
# default), apply-patch-builtin, function (openai-compatible's), edits (search/replace blocks and
# whole files; other local models'), whole-file (the local SmolLM2's: small models manage only that).
try:
    SPARK_EDIT_STYLE = edit_style_from(os.environ, provider=_PROVIDER, model=_MODEL).value
except UpstreamConfigError as exc:
    raise ConfigError(exc.message) from None
# The tool loop (docs/protocol.md §4 "Rounds"): a turn answers the model's tool calls and lets
# it go on, for at most this many responses; then the turn ends, saying so.
SPARK_MAX_ROUNDS = envint("SPARK_MAX_ROUNDS", 8)
if SPARK_MAX_ROUNDS < 1:
    raise ConfigError(f"SPARK_MAX_ROUNDS must be at least 1, got {SPARK_MAX_ROUNDS}")
# Test rounds (docs/protocol.md §4 "Rounds"): after a round that changed files, the IDE runs the
# tests of a workspace that has some and has the model fix a failure (a workspace's own switch,
# ``Workspace.auto_test``, wins); the model is told at most this many bytes of a run's output.
SPARK_AUTO_TEST = envchoice("SPARK_AUTO_TEST", "on", ("on", "off")) == "on"
# Checkpoints kept per workspace, the newest (live.checkpoints): one before every turn, named
# ones, one before every restore.
SPARK_CHECKPOINTS_KEEP = envint("SPARK_CHECKPOINTS_KEEP", 200)
if SPARK_CHECKPOINTS_KEEP < 1:
    raise ConfigError(f"SPARK_CHECKPOINTS_KEEP must be at least 1, got {SPARK_CHECKPOINTS_KEEP}")
# Steering by editing (live.edit_steer): a person's edit of the lines the running turn wrote
# is committed as a steer this long after their last change there; 0: never (the feature off).
SPARK_EDIT_STEER_IDLE_MS = envint("SPARK_EDIT_STEER_IDLE_MS", 600)
if not 0 <= SPARK_EDIT_STEER_IDLE_MS <= 60_000:
    raise ConfigError(f"SPARK_EDIT_STEER_IDLE_MS must be from 0 to 60000, got {SPARK_EDIT_STEER_IDLE_MS}")
# The widest step window (live.steps): a room applies and sends what the model wrote in steps,
# each taking the deltas that arrived since the last; alone in the process a step per delta,
# each further answer streaming at once widens the window by 1 ms up to this; 0: a step per delta.
SPARK_STEP_MS = envint("SPARK_STEP_MS", MOST_MS)
if not 0 <= SPARK_STEP_MS <= 100:
    raise ConfigError(f"SPARK_STEP_MS must be from 0 to 100, got {SPARK_STEP_MS}")
SPARK_RUN_OUTPUT_TO_MODEL = envint("SPARK_RUN_OUTPUT_TO_MODEL", RUN_OUTPUT_TO_MODEL)
if SPARK_RUN_OUTPUT_TO_MODEL < MIN_BUDGET:
    raise ConfigError(f"SPARK_RUN_OUTPUT_TO_MODEL must be at least {MIN_BUDGET} bytes, got {SPARK_RUN_OUTPUT_TO_MODEL}")
# What the turns a person asks for may cost a day, in US dollars (live.spend; unset: no limit).
SPARK_DAILY_BUDGET_USD = envmoney("SPARK_DAILY_BUDGET_USD")
SPARK_CONTEXT_TOKENS = envint("SPARK_CONTEXT_TOKENS", 2500 if _SMALL_LOCAL_MODEL else 128_000)
# Every turn's ceiling on output tokens (the small model's answers are short; a loop is not).
SPARK_MAX_OUTPUT_TOKENS = envint("SPARK_MAX_OUTPUT_TOKENS", 600 if _SMALL_LOCAL_MODEL else 16_000)
SPARK_WS_MAX_MESSAGE_BYTES = envint("SPARK_WS_MAX_MESSAGE_BYTES", 256 * 1024)
# Under Daphne, session sockets are written pre-framed: each event framed once for all of them
# (pairing.daphne_writes, docs/pairing.md). Off: every message through the ASGI send.
SPARK_WS_DIRECT_WRITES = envbool("SPARK_WS_DIRECT_WRITES", True)
# A dense stream (a model's deltas past 20,000 characters a second) is written to a socket at most once per
# this many ms, merged (live.outbox, docs/pairing.md); 0: every step at once, whatever the rate.
SPARK_WS_PACE_MS = envint("SPARK_WS_PACE_MS", 8)
if not 0 <= SPARK_WS_PACE_MS <= 100:
    raise ConfigError(f"SPARK_WS_PACE_MS must be from 0 to 100, got {SPARK_WS_PACE_MS}")
# Per-user caps (docs/security.md; each refusal is a clear error, docs/protocol.md): session
# sockets a user holds open at once (in one server process), workspaces a user owns, a
# prompt's length, one Yjs update (a binary frame), and a workspace document's total text.
SPARK_MAX_SOCKETS_PER_USER = envint("SPARK_MAX_SOCKETS_PER_USER", 20)
SPARK_MAX_WORKSPACES_PER_USER = envint("SPARK_MAX_WORKSPACES_PER_USER", 200)
SPARK_MAX_PROMPT_CHARS = envint("SPARK_MAX_PROMPT_CHARS", 20_000)
SPARK_MAX_YJS_UPDATE_BYTES = envint("SPARK_MAX_YJS_UPDATE_BYTES", SPARK_WS_MAX_MESSAGE_BYTES)
SPARK_MAX_DOCUMENT_BYTES = envint("SPARK_MAX_DOCUMENT_BYTES", 5 * 1024 * 1024)
# Turn events a reconnecting client may be sent to catch up; a client further behind resyncs.
SPARK_REPLAY_LIMIT = envint("SPARK_REPLAY_LIMIT", 5000)
# About what each room keeps of its recent turn events in memory for reconnecting pages
# (live.replay); older ones are read from storage.
SPARK_REPLAY_BYTES = envint("SPARK_REPLAY_BYTES", 1_000_000)
if SPARK_REPLAY_BYTES < 0:
    raise ConfigError(f"SPARK_REPLAY_BYTES must be 0 or more, got {SPARK_REPLAY_BYTES}")
# A room looks every this many turns whether its document (the deleted items every rewritten
# line leaves) has grown past this many times its text plus this many bytes, and if so
# replaces it by one built from the text (docs/pairing.md, "Replacing the document").
SPARK_REPLACE_CHECK_TURNS = envint("SPARK_REPLACE_CHECK_TURNS", 10)
SPARK_REPLACE_RATIO = envint("SPARK_REPLACE_RATIO", 4)
SPARK_REPLACE_SLACK_BYTES = envint("SPARK_REPLACE_SLACK_BYTES", 64 * 1024)

# /metrics (docs/operations.md): for staff, or for `Authorization: Bearer <SPARK_METRICS_TOKEN>`.
# Every IDE process of a host writes its metrics into one directory (PROMETHEUS_MULTIPROC_DIR,
# else <SPARK_DATA_DIR>/prometheus), put in the environment here, before prometheus_client loads.
SPARK_METRICS_TOKEN = envstr("SPARK_METRICS_TOKEN", "")
if SPARK_METRICS_TOKEN and len(SPARK_METRICS_TOKEN) < 16:
    raise ConfigError("SPARK_METRICS_TOKEN must be at least 16 characters (a random string)")
PROMETHEUS_MULTIPROC_DIR = str(metrics_directory(DATA_DIR))
