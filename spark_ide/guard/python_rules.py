"""Tier 2 for Python: the rules run on each completed statement's syntax tree.

The rules see one statement at a time, so what earlier statements taught them lives in ``PythonContext``
(``python_context``): import aliases (``import subprocess as sp``), names holding SQL built by formatting
(``query = f"... {name}"`` makes a later ``cursor.execute(query)`` a finding), and names holding an MD5/SHA-1 object
(its ``.update(password)``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from spark_ide.guard.catalog import RULES
from spark_ide.guard.findings import Finding, Severity, Tier
from spark_ide.guard.python_context import SQL_WORDS, TRIGGERS, PythonContext

_SQL_METHODS = frozenset({"execute", "executemany", "executescript", "raw", "exec_driver_sql"})
_SQL_TEXT = frozenset({"text", "sqlalchemy.text", "sqlalchemy.sql.text", "sqlalchemy.sql.expression.text",
                       "sa.text", "sql.text"})
_SQL_ARGUMENTS = ("sql", "query", "statement", "operation", "raw_query", "sql_script")
_SHELL_FUNCTIONS = frozenset({
    "os.system", "os.popen", "os.popen2", "os.popen3", "os.popen4", "posix.system", "subprocess.getoutput",
    "subprocess.getstatusoutput", "commands.getoutput", "commands.getstatusoutput",
})
_UNPICKLERS = frozenset(
    {f"{module}.{name}" for module in ("pickle", "cPickle", "_pickle", "dill", "cloudpickle")
     for name in ("load", "loads", "Unpickler")}
    | {"marshal.load", "marshal.loads", "pandas.read_pickle", "jsonpickle.decode", "shelve.open"}
)
_YAML_LOADS = frozenset({"yaml.load", "yaml.load_all"})
_YAML_UNSAFE = frozenset({"yaml.unsafe_load", "yaml.unsafe_load_all"})
_SAFE_LOADERS = frozenset({"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"})
_WEAK_HASHES = frozenset({"hashlib.md5", "hashlib.sha1"})
_WEAK_HASH_NAMES = frozenset({"md5", "sha1", "sha-1"})
_HTTP_CALLS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "request", "send", "stream",
                         "Client", "AsyncClient", "Session"})
_HTTP_MODULES = frozenset({"requests", "httpx", "urllib3"})
_ALL_INTERFACES = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - the values this rule looks for
_PASSWORD_WORD = re.compile(r"pass|pwd|(?:^|_)pw(?:$|_)", re.IGNORECASE)

_DANGEROUS = (
    _SHELL_FUNCTIONS | _UNPICKLERS | _YAML_LOADS | _YAML_UNSAFE | _WEAK_HASHES | _SQL_TEXT
    | {"tempfile.mktemp", "hashlib.new", "builtins.eval", "builtins.exec"}
)


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None (a loop: a chain may be thousands deep)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return not any(isinstance(part, ast.FormattedValue) for part in node.values)
    if isinstance(node, ast.List | ast.Tuple):
        return all(_is_literal(element) for element in node.elts)
    return False


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _add_operands(node: ast.expr) -> list[ast.expr]:
    """The operands of a chain of ``+``, left to right (a loop: ``a + b + ...`` nests to the left)."""
    operands: list[ast.expr] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.BinOp) and isinstance(current.op, ast.Add):
            stack += (current.right, current.left)
        else:
            operands.append(current)
    return operands


def _names_in(node: ast.AST) -> Iterator[str]:
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            yield child.id
        elif isinstance(child, ast.Attribute):
            yield child.attr
        elif isinstance(child, ast.arg | ast.keyword) and child.arg:
            yield child.arg


def _mentions_password(*nodes: ast.AST) -> bool:
    return any(_PASSWORD_WORD.search(name) for node in nodes for name in _names_in(node))


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _argument(call: ast.Call, index: int, *names: str) -> ast.expr | None:
    if len(call.args) > index and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    return next((kw.value for kw in call.keywords if kw.arg in names), None)


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value) and node.value is not Ellipsis


def _describe(node: ast.expr) -> str:
    if isinstance(node, ast.JoinedStr):
        return "an f-string"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return "% formatting"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return "string concatenation"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return "str.format()"
    name = dotted(node)
    return f"`{name}`" if name else "a computed value"


def _looks_like_sql(node: ast.expr) -> bool:
    return any(
        isinstance(sub, ast.Constant) and isinstance(sub.value, str) and SQL_WORDS.search(sub.value) is not None
        for sub in ast.walk(node)
    )


def _sql_building(node: ast.expr, context: PythonContext) -> str | None:
    """How ``node`` builds a string by formatting (an f-string, %, .format, +), or None for a literal or unknown."""
    if isinstance(node, ast.JoinedStr) and not _is_literal(node):
        return "an f-string"
    if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and not _is_literal(node.right)
            and (_is_str(node.left) or dotted(node.left) is not None)):
        return "% formatting"
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and (node.args or node.keywords)):
        return "str.format()"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = _add_operands(node)
        stringy = any(_is_str(p) or _sql_building(p, context) or dotted(p) in context.tainted for p in parts)
        if stringy and not all(_is_literal(p) for p in parts):
            return "string concatenation"
    return None


class StatementRules:
    """Runs every Python rule over one parsed statement; holds the file's context between statements."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.context = PythonContext()

    def check(self, tree: ast.Module, first_line: int, offset: int) -> list[Finding]:
        """Findings of one statement, its tree parsed with ``offset`` scaffold lines before it."""
        self._first_line = first_line - offset
        self._found: list[Finding] = []
        nodes = list(ast.walk(tree))
        self._nodes = nodes
        self._targets: dict[int, list[str]] | None = None  # made when a rule asks (``_assigned_to``)
        for node in nodes:
            if isinstance(node, ast.Call):
                self._call(node)
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._learn_import(node)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
                self._learn_assignment(node)
        self._nodes, self._targets = [], None  # the tree is not kept past its statement
        return self._found

    def _line(self, node: ast.expr | ast.stmt) -> int:
        return self._first_line + node.lineno - 1

    def _report(self, rule: str, node: ast.expr, message: str, *, severity: Severity | None = None,
                fix: str | None = None) -> None:
        entry = RULES[rule]
        line = self._line(node)
        self._found.append(Finding(
            rule=rule, severity=severity or entry.severity, path=self.path, line=line,
            message=f"line {line} {message}", fix=fix or entry.fix, tier=Tier.STATEMENT,
        ))

    def _qualified(self, node: ast.expr) -> str | None:
        name = dotted(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        known = self.context.aliases.get(head)
        return name if known is None else known + dot + rest

    def _call(self, call: ast.Call) -> None:
        name = self._qualified(call.func)
        attr = call.func.attr if isinstance(call.func, ast.Attribute) else None
        self._sql(call, name, attr)
        self._shell(call, name)
        self._verify(call, name, attr)
        self._debug_bind_all(call, attr)
        if name is None:
            return
        if name in ("eval", "exec", "builtins.eval", "builtins.exec"):
            code = _argument(call, 0, "source", "object")
            if code is not None and not _is_literal(code):
                self._report("eval-exec", call, f"calls {name}() on {_describe(code)}: that runs whatever code it "
                             "holds")
        elif name in _UNPICKLERS:
            self._report("pickle-load", call, f"deserializes with {name}(): a crafted payload runs code as it loads")
        elif name in _YAML_LOADS or name in _YAML_UNSAFE:
            self._yaml(call, name)
        elif name in _WEAK_HASHES or name == "hashlib.new" or attr == "update":
            self._weak_hash(call, name, attr)
        elif name == "tempfile.mktemp":
            self._report("mktemp", call, "names a temp file with tempfile.mktemp(): another process can create it "
                         "first")

    def _sql(self, call: ast.Call, name: str | None, attr: str | None) -> None:
        if attr in _SQL_METHODS:
            sink, fix = f"{attr}()", None
            if attr == "raw":
                fix = ('pass the values as params: Model.objects.raw("SELECT * FROM app_user WHERE name = %s", '
                       "[name])")
        elif name in _SQL_TEXT:
            sink = "text()"
            fix = 'use bound parameters: conn.execute(text("SELECT * FROM users WHERE name = :name"), {"name": name})'
        else:
            return
        query = _argument(call, 0, *_SQL_ARGUMENTS)
        if query is None:
            return
        how = _sql_building(query, self.context)
        if how is not None:
            self._report("sql-format", call, f"builds SQL with {how} and passes it to {sink}", fix=fix)
            return
        variable = dotted(query)
        if variable in self.context.tainted:
            line, how = self.context.tainted[variable]
            self._report("sql-format", call, f"passes `{variable}` (SQL built with {how} on line {line}) to {sink}",
                         fix=fix)

    def _shell(self, call: ast.Call, name: str | None) -> None:
        if name in _SHELL_FUNCTIONS:
            command = _argument(call, 0, "cmd", "command")
            if command is None:
                return
            if _is_literal(command):
                self._report("os-system", call, f"runs a fixed command through a shell with {name}()",
                             severity=Severity.LOW)
            else:
                self._report("os-system", call, f"runs {name}() on a command built from {_describe(command)}: the "
                             "shell runs whatever it contains")
            return
        if not _is_true(_keyword(call, "shell")):
            return
        command = _argument(call, 0, "args", "cmd", "command")
        if command is not None and not _is_literal(command):
            self._report("shell-true", call, f"runs a shell command built from {_describe(command)} with "
                         "shell=True: the shell runs whatever it contains")

    def _yaml(self, call: ast.Call, name: str) -> None:
        if name in _YAML_LOADS:
            loader = _argument(call, 1, "Loader")
            loader_name = dotted(loader) if loader is not None else None
            if loader_name is not None and loader_name.rpartition(".")[2] in _SAFE_LOADERS:
                return
        self._report("yaml-load", call, f"parses YAML with {name}() and no safe loader: a document can build "
                     "arbitrary Python objects")

    def _weak_hash(self, call: ast.Call, name: str | None, attr: str | None) -> None:
        if _keyword(call, "usedforsecurity") is not None and not _is_true(_keyword(call, "usedforsecurity")):
            return
        if attr == "update":
            receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
            if receiver in self.context.weak_hashers and _mentions_password(*call.args):
                self._report("weak-password-hash", call, f"feeds a password to `{receiver}`, an MD5/SHA-1 hash: "
                             "fast unsalted hashes are cracked in seconds")
            return
        algorithm = name
        if name == "hashlib.new":
            first = _argument(call, 0, "name")
            if not (isinstance(first, ast.Constant) and str(first.value).lower() in _WEAK_HASH_NAMES):
                return
            algorithm = f"hashlib.new({first.value!r})"
        if _mentions_password(*call.args, *call.keywords) or self._assigned_to_password(call):
            self._report("weak-password-hash", call, f"hashes a password with {algorithm}(): fast unsalted hashes "
                         "are cracked in seconds")

    def _assigned_to_password(self, call: ast.Call) -> bool:
        return any(_PASSWORD_WORD.search(name) for name in self._assigned_to(call))

    def _assigned_to(self, call: ast.Call) -> list[str]:
        """The names the statement holding ``call`` assigns to. The map of every call to them is made the first time
        a rule asks, not for every statement: it walks every assigned value once more (a statement holding a long
        literal, a minified line, spent about as long in that walk as in all the rules)."""
        if self._targets is None:
            self._targets = {}
            for node in self._nodes:
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [name for name in map(dotted, targets) if name is not None]
                    for sub in ast.walk(node.value):
                        if isinstance(sub, ast.Call):
                            self._targets[id(sub)] = names
        return self._targets.get(id(call), [])

    def _verify(self, call: ast.Call, name: str | None, attr: str | None) -> None:
        verify = _keyword(call, "verify")
        if not (isinstance(verify, ast.Constant) and verify.value is False):
            return
        module = (name or "").partition(".")[0]
        if module in _HTTP_MODULES or attr in _HTTP_CALLS or name in _HTTP_CALLS:
            self._report("verify-false", call, "turns off TLS certificate checks (verify=False): anyone on the path "
                         "can read and change the traffic")

    def _debug_bind_all(self, call: ast.Call, attr: str | None) -> None:
        if attr != "run" or not _is_true(_keyword(call, "debug")):
            return
        host = _argument(call, 0, "host")
        if isinstance(host, ast.Constant) and host.value in _ALL_INTERFACES:
            self._report("debug-bind-all", call, f'starts the debug server on every interface (host="{host.value}",'
                         " debug=True): its debugger runs code for anyone who reaches the port")

    def _learn_import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if isinstance(node, ast.Import):
                local = alias.asname or alias.name.partition(".")[0]
                qualified = alias.name if alias.asname else local
            elif node.module and alias.name != "*":
                local, qualified = alias.asname or alias.name, f"{node.module}.{alias.name}"
            else:
                continue
            self.context.aliases[local] = qualified
            if qualified in _DANGEROUS and not any(trigger in local for trigger in TRIGGERS):
                self.context.extra_triggers.add(local)  # `from os import system as run`: `run(x)` must be parsed

    def _learn_assignment(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        value = node.value
        assert value is not None
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [name for name in map(dotted, targets) if name is not None]
        how = _sql_building(value, self.context)
        if how is not None and not _looks_like_sql(value):
            how = None  # formatting, but nothing says SQL: a message, a path
        source = dotted(value)
        if how is None and source in self.context.tainted and source is not None:
            how = self.context.tainted[source][1]
        weak = isinstance(value, ast.Call) and self._qualified(value.func) in _WEAK_HASHES
        for name in names:
            if how is not None:
                self.context.tainted[name] = (self._line(node), how)
            elif not isinstance(node, ast.AugAssign):
                self.context.tainted.pop(name, None)
            if weak:
                self.context.weak_hashers.add(name)
            elif not isinstance(node, ast.AugAssign):
                self.context.weak_hashers.discard(name)
