"""The watchdog's own rules: id, default severity, what each catches and the fix to ask the model for.

Defined once here: the Python statement rules, the mapping of bandit's and ruff's overlapping checks and
docs/guard.md all read this table, so a rule id always carries the same severity and fix whichever tier found it.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_ide.guard.findings import Severity


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity  # the default; a rule may report a milder variant (a literal os.system command: LOW)
    catches: str
    fix: str


RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "sql-format", Severity.HIGH,
            "SQL built with an f-string, % formatting, .format() or + and passed to execute()/executemany()/"
            "executescript()/raw()/text(), directly or through a variable built earlier in the file",
            'pass the values as query parameters instead of formatting them into the SQL: '
            'cursor.execute("SELECT * FROM users WHERE name = %s", (name,))',
        ),
        Rule(
            "shell-true", Severity.HIGH,
            "a subprocess call with shell=True whose command is not a literal",
            'pass the command as a list and drop shell=True: subprocess.run(["grep", pattern, path], check=True)',
        ),
        Rule(
            "os-system", Severity.HIGH,
            "os.system()/os.popen()/subprocess.getoutput() (they run a shell); a literal command is LOW",
            'run the program without a shell: subprocess.run(["ls", "-l", path], check=True)',
        ),
        Rule(
            "eval-exec", Severity.HIGH,
            "eval() or exec() of anything but a literal",
            "parse the data instead of running it: ast.literal_eval(text) for Python literals, json.loads(text) "
            "for JSON, or a dict that maps allowed names to functions",
        ),
        Rule(
            "pickle-load", Severity.MEDIUM,
            "pickle/cPickle/dill/cloudpickle/marshal load(s), Unpickler, pandas.read_pickle",
            "use a data-only format such as json.loads for anything that may come from outside; "
            "unpickle only data this program wrote itself",
        ),
        Rule(
            "yaml-load", Severity.MEDIUM,
            "yaml.load()/load_all() without SafeLoader, CSafeLoader or BaseLoader; yaml.unsafe_load()",
            "use yaml.safe_load(stream) (or yaml.load(stream, Loader=yaml.SafeLoader))",
        ),
        Rule(
            "weak-password-hash", Severity.MEDIUM,
            "hashlib.md5/sha1 (or hashlib.new('md5'/'sha1')) applied to a password",
            "hash passwords with a slow salted KDF: hashlib.scrypt(password, salt=os.urandom(16), n=2**14, r=8, p=1),"
            " argon2 or bcrypt (Django: make_password)",
        ),
        Rule(
            "verify-false", Severity.MEDIUM,
            "verify=False in a requests/httpx call or client",
            'keep certificate checks on; for a private CA pass its bundle: requests.get(url, verify="/path/ca.pem")',
        ),
        Rule(
            "debug-bind-all", Severity.HIGH,
            'app.run(host="0.0.0.0", debug=True): the debugger reachable from the network',
            'bind to 127.0.0.1 while debug is on: app.run(host="127.0.0.1", debug=True), '
            "or turn debug off when serving on all interfaces",
        ),
        Rule(
            "mktemp", Severity.MEDIUM,
            "tempfile.mktemp(): another process can create the file between naming and opening",
            "use tempfile.NamedTemporaryFile() or tempfile.mkstemp(), which create the file atomically",
        ),
        Rule(
            "secret-aws-key", Severity.HIGH,
            "an AWS access key id (AKIA…/ASIA…) or a 40-character AWS secret in an aws…secret assignment",
            'read it from the environment (os.environ["AWS_ACCESS_KEY_ID"]) or the AWS credential chain; '
            "revoke the exposed key",
        ),
        Rule(
            "secret-private-key", Severity.HIGH,
            "a -----BEGIN … PRIVATE KEY----- header",
            "load the key from a file outside the repository or a secret store",
        ),
        Rule(
            "secret-token", Severity.HIGH,
            "Google (AIza…), Slack (xox?-…), GitHub (ghp_…, github_pat_…), Stripe live (sk_live_…) and "
            "OpenAI/Anthropic-style (sk-…) keys of realistic length",
            'read the token from the environment (os.environ["GITHUB_TOKEN"]) and revoke the exposed one',
        ),
        Rule(
            "secret-password", Severity.MEDIUM,
            "a password/secret/token/api-key-named assignment of a high-entropy literal (not a placeholder); "
            "HIGH when the literal looks machine-generated",
            'read it from the environment: db_password = os.environ["DB_PASSWORD"]',
        ),
    )
}
