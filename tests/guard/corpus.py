"""Vulnerable and safe snippets, each rule with positives and near-miss negatives.

Key-shaped strings are assembled from two halves so this file itself holds no token a secret scanner would flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_ide.guard import Severity

AWS_KEY_ID = "AKIA" + "Z3MSJV4WWNKWW5FG"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCY9Q2ZK8RT4L"
GITHUB_TOKEN = "ghp_" + "R7kq2Vx9LmP4sT8wZ3nB6yH1cJ5dF0gA2eUo"
OPENAI_KEY = "sk-proj-" + "T3BlbkFJ9xQ2mZ7vK4pL8rW1sN6yH0cJ5dF3gA"
SLACK_TOKEN = "xoxb-" + "2814596230-5719283746102-Xk9mQ2vL7pR4tY6wZ8nB"
GOOGLE_KEY = "AIza" + "SyD4x9Qm2Lk7Vp3Rt8Wn5Zb1Yc6Hj0Fg2Ke"
STRIPE_KEY = "sk_" + "live_51Hx9QmL2kV7pR3tW8nZ5bY1c"
PRIVATE_KEY = "-----BEGIN RSA " + "PRIVATE KEY-----"


@dataclass(frozen=True)
class Case:
    rule: str
    text: str
    line: int | None  # where the finding is; None: a negative, nothing may be reported at all
    path: str = "snippet.py"
    severity: Severity | None = None  # when it is not the rule's default


def positive(rule: str, text: str, line: int = 1, path: str = "snippet.py", severity: Severity | None = None) -> Case:
    return Case(rule, text, line, path, severity)


def negative(rule: str, text: str, path: str = "snippet.py") -> Case:
    return Case(rule, text, None, path)


CASES = [
    positive("sql-format", "cursor.execute(f\"SELECT * FROM users WHERE name = '{name}'\")\n"),
    positive("sql-format", 'query = "SELECT * FROM users WHERE id = %s" % user_id\ncursor.execute(query)\n', 2),
    positive("sql-format", 'cur.executemany("INSERT INTO t VALUES (" + values + ")", rows)\n'),
    positive("sql-format", "User.objects.raw(\"SELECT * FROM app_user WHERE name = '{}'\".format(name))\n"),
    positive("sql-format", 'def drop(conn, i):\n    conn.execute(text(f"DELETE FROM t WHERE id = {i}"))\n', 2),
    positive("sql-format", 'for row in cursor.execute(\n    f"SELECT * FROM t WHERE a = {a}"\n):\n    print(row)\n'),
    positive("sql-format", 'sql = "SELECT * FROM t"\nsql += f" WHERE owner = {owner}"\n\n\ndb.execute(sql)\n', 5),
    negative("sql-format", 'cursor.execute("SELECT * FROM users WHERE name = %s", (name,))\n'),
    negative("sql-format", 'cursor.execute("SELECT * FROM users WHERE name = ?", [name])\n'),
    negative("sql-format", 'query = "SELECT * FROM t WHERE a = %s"\ncursor.execute(query, (a,))\n'),
    negative("sql-format", 'conn.execute(text("SELECT * FROM t WHERE id = :id"), {"id": i})\n'),
    negative("sql-format", 'q = f"SELECT * FROM t WHERE a = {a}"\nq = "SELECT 1"\ncursor.execute(q)\n'),
    negative("sql-format", 'message = f"Hello {name}"\nqueue.execute(message)\n'),
    positive("shell-true", 'subprocess.run(f"ls {path}", shell=True)\n'),
    positive("shell-true", 'subprocess.Popen(\n    "grep " + pattern + " notes.txt",\n    shell=True,\n)\n'),
    positive("shell-true", "import subprocess as sp\nsp.check_output(cmd, shell=True)\n", 2),
    negative("shell-true", 'subprocess.run(["ls", path])\n'),
    negative("shell-true", 'subprocess.run("ls -l", shell=True)\n'),
    negative("shell-true", "subprocess.run(cmd, shell=False)\n"),
    positive("os-system", 'os.system("rm -rf " + folder)\n'),
    positive("os-system", 'from os import popen as run\n\nrun(f"cat {name}")\n', 3),
    positive("os-system", 'os.system("clear")\n', severity=Severity.LOW),
    positive("os-system", "def clean(cmd):\n    from os import system as sh\n    sh(cmd)\n", 3),
    negative("os-system", "path = os.path.join(a, b)\n"),
    negative("os-system", "system_name = platform.system()\n"),
    negative("os-system", 'subprocess.run(["clear"], check=True)\n'),
    positive("eval-exec", "result = eval(user_input)\n"),
    positive("eval-exec", 'exec(compile(source, "<cell>", "exec"))\n'),
    positive("eval-exec", "class Calc:\n    def run(self, expr):\n        if eval(expr):\n            return 1\n", 3),
    negative("eval-exec", "value = ast.literal_eval(text)\n"),
    negative("eval-exec", 'total = eval("1 + 2")\n'),
    negative("eval-exec", "model.eval()\n"),
    positive("pickle-load", "data = pickle.loads(blob)\n"),
    positive("pickle-load", "with open(p, 'rb') as f:\n    obj = marshal.load(f)\n", 2),
    positive("pickle-load", "import dill\nstate = dill.loads(payload)\n", 2),
    negative("pickle-load", "blob = pickle.dumps(obj)\n"),
    negative("pickle-load", "data = json.loads(text)\n"),
    positive("yaml-load", "config = yaml.load(f)\n"),
    positive("yaml-load", "config = yaml.load(text, Loader=yaml.Loader)\n"),
    positive("yaml-load", "from yaml import unsafe_load\nconfig = unsafe_load(s)\n", 2),
    negative("yaml-load", "config = yaml.safe_load(f)\n"),
    negative("yaml-load", "config = yaml.load(f, Loader=yaml.SafeLoader)\n"),
    negative("yaml-load", "config = yaml.load(f, yaml.CSafeLoader)\n"),
    positive("weak-password-hash", "hashed = hashlib.md5(password.encode()).hexdigest()\n"),
    positive("weak-password-hash", 'digest = hashlib.new("sha1", pwd.encode()).hexdigest()\n'),
    positive("weak-password-hash", "h = hashlib.md5()\nh.update(user.password.encode())\n", 2),
    positive("weak-password-hash", "stored_password = hashlib.sha1(secret).hexdigest()\n"),
    negative("weak-password-hash", "checksum = hashlib.md5(data).hexdigest()\n"),
    negative("weak-password-hash", "hashed = hashlib.sha256(password.encode()).hexdigest()\n"),
    negative("weak-password-hash", "key = hashlib.md5(password, usedforsecurity=False)\n"),
    positive("verify-false", "response = requests.get(url, verify=False)\n"),
    positive("verify-false", "client = httpx.Client(verify=False)\n"),
    positive("verify-false", "async def f(s):\n    await s.post(url,\n                 json=body, verify=False)\n", 2),
    negative("verify-false", "response = requests.get(url, verify=True)\n"),
    negative("verify-false", 'response = requests.get(url, verify="/etc/ssl/ca.pem")\n'),
    negative("verify-false", "form.validate(verify=False)\n"),
    positive("debug-bind-all", 'app.run(host="0.0.0.0", debug=True)\n'),
    positive("debug-bind-all", 'if __name__ == "__main__":\n    app.run("0.0.0.0", 8000, debug=True)\n', 2),
    negative("debug-bind-all", "app.run(debug=True)\n"),
    negative("debug-bind-all", 'app.run(host="0.0.0.0")\n'),
    negative("debug-bind-all", 'app.run(host="0.0.0.0", debug=False)\n'),
    positive("mktemp", "name = tempfile.mktemp()\n"),
    positive("mktemp", 'from tempfile import mktemp as temp_name\npath = temp_name(suffix=".txt")\n', 2),
    negative("mktemp", "handle, path = tempfile.mkstemp()\n"),
    negative("mktemp", "with tempfile.NamedTemporaryFile() as f:\n    f.write(data)\n"),
    positive("secret-aws-key", f'AWS_ACCESS_KEY_ID = "{AWS_KEY_ID}"\n'),
    positive("secret-aws-key", f"default:\n  aws_secret_access_key: {AWS_SECRET}\n", 2, "config.yml"),
    positive("secret-aws-key", f'const creds = {{ id: "{AWS_KEY_ID}" }};\n', path="aws.js"),
    negative("secret-aws-key", 'AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"\n'),
    negative("secret-aws-key", 'key_id = os.environ["AWS_ACCESS_KEY_ID"]\n'),
    positive("secret-private-key", f"{PRIVATE_KEY}\nMIIEpAIBAAKCAQEA\n", path="id_rsa"),
    positive("secret-private-key", f'KEY = """\n{PRIVATE_KEY}\n"""\n', 2),
    negative("secret-private-key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n", path="key.pem"),
    negative("secret-private-key", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n", path="cert.pem"),
    positive("secret-token", f'GITHUB_TOKEN = "{GITHUB_TOKEN}"\n'),
    positive("secret-token", f'client = OpenAI(api_key="{OPENAI_KEY}")\n'),
    positive("secret-token", f"slack:\n  token: {SLACK_TOKEN}\n", 2, "settings.yaml"),
    positive("secret-token", f'const maps = "{GOOGLE_KEY}";\n', path="maps.ts"),
    positive("secret-token", f'stripe.api_key = "{STRIPE_KEY}"\n'),
    negative("secret-token", 'SLACK_TOKEN = "xoxb-your-token-here"\n'),
    negative("secret-token", 'token = os.environ["GITHUB_TOKEN"]\n'),
    negative("secret-token", 'stripe.api_key = "sk_test_51Hx9QmL2kV7pR3tW8nZ5bY1c"\n'),
    negative("secret-token", 'API_KEY = "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"\n'),
    positive("secret-password", 'DB_PASSWORD = "Xk9#mQ2$vL7p"\n'),
    positive("secret-password", "DEBUG=1\nAPI_TOKEN=f8Kd92mQx7Lp0zR4tY6w\n", 2, ".env"),
    positive("secret-password", 'client_secret = "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a"\n', severity=Severity.HIGH),
    positive("secret-password", 'connect(host="db", password="Xk9#mQ2$vL7p")\n'),
    negative("secret-password", 'password = "changeme"\n'),
    negative("secret-password", 'password = ""\n'),
    negative("secret-password", 'password = os.environ["DB_PASSWORD"]\n'),
    negative("secret-password", 'API_KEY = "<your-key>"\n'),
    negative("secret-password", 'password_label = "Enter your password"\n'),
    negative("secret-password", 'if password == "Xk9#mQ2$vL7p":\n    login()\n'),
    negative("secret-password", "API_TOKEN=${API_TOKEN}\n", ".env"),
]
