#!/usr/bin/env python3
"""Extract Kafka's broker config definitions (AbstractKafkaConfig.CONFIG_DEF)
from Apache Kafka's Java sources and print them as JSON lines:
name, type, default (string or null), importance, validator (simple ones).

Usage: kafka_defs.py SRC_ROOT > defs.jsonl, where SRC_ROOT holds the
modules' src/main/java trees (clients, server, server-common, storage,
group-coordinator, transaction-coordinator, raft, ...)."""
import json, os, re, sys

root = sys.argv[1]
# The ConfigDefs merged into AbstractKafkaConfig.CONFIG_DEF, minus ZkConfigs
# (ZooKeeper mode is gone in Kafka 4).
SOURCES = [
    ("RemoteLogManagerConfig", "configDef"),
    ("ServerConfigs", "CONFIG_DEF"),
    ("KRaftConfigs", "CONFIG_DEF"),
    ("SocketServerConfigs", "CONFIG_DEF"),
    ("ReplicationConfigs", "CONFIG_DEF"),
    ("GroupCoordinatorConfig", "GROUP_COORDINATOR_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "NEW_GROUP_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "OFFSET_MANAGEMENT_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "CONSUMER_GROUP_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "SHARE_GROUP_CONFIG_DEF"),
    ("CleanerConfig", "CONFIG_DEF"),
    ("LogConfig", "SERVER_CONFIG_DEF"),
    ("ShareGroupConfig", "CONFIG_DEF"),
    ("ShareCoordinatorConfig", "CONFIG_DEF"),
    ("TransactionLogConfig", "CONFIG_DEF"),
    ("TransactionStateManagerConfig", "CONFIG_DEF"),
    ("QuorumConfig", "CONFIG_DEF"),
    ("MetricConfigs", "CONFIG_DEF"),
    ("QuotaConfig", "CONFIG_DEF"),
    ("BrokerSecurityConfigs", "CONFIG_DEF"),
    ("DelegationTokenManagerConfigs", "CONFIG_DEF"),
    ("PasswordEncoderConfigs", "CONFIG_DEF"),
]

files = {}
for dp, _, fns in os.walk(root):
    for fn in fns:
        if fn.endswith(".java"):
            files.setdefault(fn[:-5], []).append(os.path.join(dp, fn))

def strip_comments(s):
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c == '"':
            j = i + 1
            while j < n and s[j] != '"':
                j += 2 if s[j] == '\\' else 1
            out.append(s[i:j+1]); i = j + 1
        elif s.startswith("//", i):
            j = s.find("\n", i); i = n if j < 0 else j
        elif s.startswith("/*", i):
            j = s.find("*/", i); i = n if j < 0 else j + 2
        else:
            out.append(c); i += 1
    return "".join(out)

src = {}
def text(cls):
    if cls not in src:
        ps = files.get(cls, [])
        src[cls] = strip_comments(open(ps[0]).read()) if ps else ""
    return src[cls]

FIELD = re.compile(r'(?:public|private|protected)?\s*static\s+final\s+[\w<>\[\]?, .]+?\s+(\w+)\s*=\s*', re.S)
consts = {}  # (cls, name) -> expr text
def load_consts(cls):
    if (cls, None) in consts:
        return
    consts[(cls, None)] = True
    t = text(cls)
    for m in FIELD.finditer(t):
        # read to the ';' at depth 0
        i, depth, j = m.end(), 0, m.end()
        while j < len(t):
            c = t[j]
            if c == '"':
                j += 1
                while t[j] != '"':
                    j += 2 if t[j] == '\\' else 1
            elif c in "([{": depth += 1
            elif c in ")]}": depth -= 1
            elif c == ';' and depth == 0: break
            j += 1
        consts[(cls, m.group(1))] = t[i:j].strip()

def split_args(s):
    args, depth, cur, i = [], 0, [], 0
    while i < len(s):
        c = s[i]
        if c == '"':
            j = i + 1
            while s[j] != '"':
                j += 2 if s[j] == '\\' else 1
            cur.append(s[i:j+1]); i = j + 1; continue
        if c in "([{": depth += 1
        if c in ")]}": depth -= 1
        if c == ',' and depth == 0:
            args.append("".join(cur).strip()); cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        args.append("".join(cur).strip())
    return args

class Unresolved(Exception):
    pass

def imports_of(cls):
    t = text(cls)
    m = {}
    for im in re.finditer(r'import\s+(static\s+)?([\w.]+)\s*;', t):
        parts = im.group(2).split(".")
        if im.group(1):
            m[parts[-1]] = (parts[-2], parts[-1])
        else:
            m[parts[-1]] = (parts[-1], None)
    return m

JAVA_CONST = {
    "Integer.MAX_VALUE": 2**31-1, "Long.MAX_VALUE": 2**63-1, "Short.MAX_VALUE": 2**15-1,
    "Double.MAX_VALUE": 1.7976931348623157e308, "Integer.MIN_VALUE": -2**31, "Long.MIN_VALUE": -2**63,
}
TU = {"NANOSECONDS": 1e-6, "MICROSECONDS": 1e-3, "MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60000, "HOURS": 3600000, "DAYS": 86400000}

def resolve(cls, name, seen=()):
    """Value of identifier name (maybe Class.NAME) seen from cls."""
    if name in JAVA_CONST:
        return JAVA_CONST[name]
    if (cls, name) in seen:
        raise Unresolved(name)
    seen = seen + ((cls, name),)
    parts = name.split(".")
    if len(parts) >= 2:
        owner, field = parts[-2], parts[-1]
        load_consts(owner)
        if (owner, field) in consts:
            return evaluate(owner, consts[(owner, field)], seen)
        raise Unresolved(name)
    load_consts(cls)
    if (cls, name) in consts:
        return evaluate(cls, consts[(cls, name)], seen)
    im = imports_of(cls)
    if name in im and im[name][1]:
        owner = im[name][0]
        load_consts(owner)
        if (owner, name) in consts:
            return evaluate(owner, consts[(owner, name)], seen)
    # a superclass or interface constant
    m = re.search(r'class\s+\w+\s+(?:extends\s+(\w+))?\s*(?:implements\s+([\w, ]+))?', text(cls))
    if m:
        for sup in filter(None, [m.group(1)] + [x.strip() for x in (m.group(2) or "").split(",")]):
            load_consts(sup)
            if (sup, name) in consts:
                return evaluate(sup, consts[(sup, name)], seen)
    raise Unresolved(name)

TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?[lLdDfF]?)|([A-Za-z_][\w.]*)|(.))')

SYN = None
def server_synonyms():
    """topic config -> its broker synonyms, highest first (ServerTopicConfigSynonyms)."""
    global SYN
    if SYN is None:
        SYN = {}
        t = text("ServerTopicConfigSynonyms")
        body = t[t.index("ALL_TOPIC_CONFIG_SYNONYMS"):t.index("Map<String, String> TOPIC_CONFIG_SYNONYMS")]
        for m in re.finditer(r'(sameNameWithLogPrefix|sameNameWithLogCleanerPrefix|sameName|singleWithLogPrefix|singleWithLogCleanerPrefix|single|listWithLogPrefix)\((TopicConfig\.\w+)((?:,\s*(?:"[^"]*"|new ConfigSynonym\("[^"]*"(?:, [\w.]+)?\)))*)\s*\)', body):
            kind, tc = m.group(1), evaluate("TopicConfig", m.group(2))
            extra = re.findall(r'"([^"]*)"', m.group(3))
            names = {
                "sameNameWithLogPrefix": ["log." + tc],
                "sameNameWithLogCleanerPrefix": ["log.cleaner." + tc],
                "sameName": [tc],
                "singleWithLogPrefix": ["log." + e for e in extra],
                "singleWithLogCleanerPrefix": ["log.cleaner." + e for e in extra],
                "single": extra,
                "listWithLogPrefix": ["log." + e for e in extra],
            }[kind]
            SYN[tc] = names
    return SYN

def evaluate(cls, expr, seen=()):
    expr = expr.strip()
    m = re.fullmatch(r'(?:ServerTopicConfigSynonyms\.)?serverSynonym\((.*)\)', expr, re.S)
    if m:
        return server_synonyms()[evaluate(cls, m.group(1), seen)][0]
    # Function-like special cases first.
    m = re.fullmatch(r'TimeUnit\.(\w+)\.to(\w+)\((.*)\)', expr, re.S)
    if m:
        v = evaluate(cls, m.group(3), seen)
        unit = {"MILLIS": "MILLISECONDS", "NANOS": "NANOSECONDS", "MICROS": "MICROSECONDS"}.get(m.group(2).upper(), m.group(2).upper())
        return int(v * TU[m.group(1)] / TU[unit])
    m = re.fullmatch(r'Math\.(max|min)\((.*)\)', expr, re.S)
    if m:
        a, b = split_args(m.group(2))
        f = max if m.group(1) == "max" else min
        return f(evaluate(cls, a, seen), evaluate(cls, b, seen))
    m = re.fullmatch(r'(?:Collections\.emptyList|Collections\.emptySet|List\.of|Set\.of|Arrays\.asList|Utils\.mkList)\((.*)\)', expr, re.S)
    if m:
        inner = m.group(1).strip()
        return [evaluate(cls, a, seen) for a in split_args(inner)] if inner else []
    m = re.fullmatch(r'String\.join\((.*)\)', expr, re.S)
    if m:
        args = split_args(m.group(1))
        sep = evaluate(cls, args[0], seen)
        rest = [evaluate(cls, a, seen) for a in args[1:]]
        if len(rest) == 1 and isinstance(rest[0], list):
            rest = rest[0]
        return sep.join(str(x) for x in rest)
    m = re.fullmatch(r'(\w+)\.class\.getName\(\)', expr)
    if m:
        # class name: find the package
        ps = files.get(m.group(1))
        if ps:
            pkg = re.search(r'package\s+([\w.]+);', open(ps[0]).read()).group(1)
            return pkg + "." + m.group(1)
        raise Unresolved(expr)
    m = re.fullmatch(r'(\w+(?:\.\w+)*)\.(name|toString)\(\)', expr)
    if m and m.group(1).count(".") >= 1:
        return m.group(1).split(".")[-1]  # an enum constant's name
    m = re.fullmatch(r'\((int|long|short|double)\)\s*(.*)', expr, re.S)
    if m:
        v = evaluate(cls, m.group(2), seen)
        return int(v) if m.group(1) != "double" else float(v)
    # Tokenize into a Python expression.
    py = []
    pos = 0
    while pos < len(expr):
        t = TOKEN.match(expr, pos)
        if not t:
            raise Unresolved(expr)
        pos = t.end()
        s, num, ident, other = t.groups()
        if s is not None:
            py.append(repr(bytes(s[1:-1], "utf-8").decode("unicode_escape")))
        elif num is not None:
            n = num.replace("_", "").rstrip("lLdDfF")
            py.append(n)
        elif ident is not None:
            if ident in ("null",): py.append("None")
            elif ident == "true": py.append("True")
            elif ident == "false": py.append("False")
            else:
                v = resolve(cls, ident, seen)
                py.append(repr(v))
        elif other is not None:
            if other == "/":
                py.append("//")
            elif other in "+-*()%":
                py.append(other)
            elif other.strip() == "":
                continue
            else:
                raise Unresolved(expr)
    code = " ".join(py)
    try:
        v = eval(code)
    except Exception:
        raise Unresolved(expr)
    return v

TYPES = {"BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}
IMPS = {"HIGH", "MEDIUM", "LOW"}

def base(a):
    return a.split(".")[-1]

def validator(cls, v):
    v = v.strip()
    m = re.fullmatch(r'(?:ConfigDef\.)?Range\.atLeast\((.*)\)|atLeast\((.*)\)', v, re.S)
    if m:
        return {"atLeast": evaluate(cls, m.group(1) or m.group(2))}
    m = re.fullmatch(r'(?:ConfigDef\.)?Range\.between\((.*)\)|between\((.*)\)', v, re.S)
    if m:
        a, b = split_args(m.group(1) or m.group(2))
        return {"between": [evaluate(cls, a), evaluate(cls, b)]}
    m = re.fullmatch(r'(?:ConfigDef\.)?(ValidString|ValidList)\.in\((.*)\)|in\((.*)\)', v, re.S)
    if m:
        inner = m.group(2) or m.group(3)
        try:
            vals = [evaluate(cls, a) for a in split_args(inner)]
            flat = []
            for x in vals:
                flat.extend(x if isinstance(x, list) else [x])
            return {"in": flat, "list": m.group(1) == "ValidList"}
        except Unresolved:
            return {"unparsed": v}
    return {"unparsed": v}

def fmt_default(t, v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    if isinstance(v, float):
        if t in ("INT", "LONG", "SHORT"):
            return str(int(v))
        return repr(v)
    return str(v)

def defs_of(cls, field):
    t = text(cls)
    m = re.search(r'\b' + re.escape(field) + r'\b\s*(?:=|\(\)\s*\{)', t)
    if not m:
        raise SystemExit(f"no {field} in {cls}")
    # from there to the end of the statement or method: collect .define( calls
    start = m.end()
    depth, j = 0, start
    body_end = None
    # read until the first ';' at depth 0 (a field) - for a method, until the return's ';'
    if t[m.end()-1] == '{':
        body_end = t.find("\n    }", start)
    else:
        while j < len(t):
            c = t[j]
            if c == '"':
                j += 1
                while t[j] != '"':
                    j += 2 if t[j] == '\\' else 1
            elif c in "([{": depth += 1
            elif c in ")]}": depth -= 1
            elif c == ';' and depth == 0: break
            j += 1
        body_end = j
    body = t[start:body_end]
    out = []
    for dm in re.finditer(r'\.define\(', body):
        i, depth = dm.end(), 1
        k = i
        while depth:
            c = body[k]
            if c == '"':
                k += 1
                while body[k] != '"':
                    k += 2 if body[k] == '\\' else 1
            elif c == '(':
                depth += 1
            elif c == ')':
                depth -= 1
            k += 1
        args = split_args(body[i:k-1])
        imp_i = next(n for n, a in enumerate(args) if base(a) in IMPS)
        try:
            name = evaluate(cls, args[0])
        except Unresolved as e:
            print("UNRESOLVED NAME", cls, args[0], e, file=sys.stderr)
            continue
        typ = base(args[1])
        rec = {"name": name, "type": typ, "importance": base(args[imp_i]).lower(), "source": cls}
        if imp_i >= 3:
            try:
                rec["default"] = fmt_default(typ, evaluate(cls, args[2]))
            except (Unresolved, KeyError, ValueError, TypeError) as e:
                rec["default_unparsed"] = args[2]
        else:
            rec["required"] = True
        if imp_i == 4:
            try:
                rec["validator"] = validator(cls, args[3])
            except (Unresolved, KeyError, ValueError, TypeError):
                rec["validator"] = {"unparsed": args[3]}
        out.append(rec)
    return out

if len(sys.argv) > 2 and sys.argv[2] == "synonyms":
    print(json.dumps(server_synonyms()))
    sys.exit(0)
seen = set()
for cls, field in SOURCES:
    for rec in defs_of(cls, field):
        if rec["name"] in seen:
            continue
        seen.add(rec["name"])
        print(json.dumps(rec))
