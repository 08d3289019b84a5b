#!/usr/bin/env python3
"""kpgen — generates kp_msgs.h / kp_msgs.c from protocol/schema/*.kps.

usage: kpgen.py --out DIR SCHEMA.kps...

Standard library only. The output is C struct definitions, constant
descriptor tables and thin inline wrappers; the one engine that walks the
tables is hand-written (protocol/codec.c, protocol/kp_codec.h).

THE .kps SCHEMA FORMAT
======================
Line oriented; `#` starts a comment (to end of line); blank lines are ignored.
Nesting is by indentation, two spaces per level.

A message header starts at column 0:

    request  NAME api=KEY valid=VERSIONS flexible=VERSIONS [unstable]
    response NAME api=KEY valid=VERSIONS flexible=VERSIONS
    message  NAME valid=VERSIONS flexible=VERSIONS      (standalone, no api key)

`unstable` (on a request) marks its latest version as not yet stable:
kp_api_info_t.max_stable_version is then max - 1, and a broker should
advertise only stable versions. NAME ends in Request/Response for API messages; the API name is NAME without
that suffix. A file normally holds the request and the response of one API.

Each line indented under a message (or under a struct-typed field) is a field,
in wire order:

    FieldName TYPE v=VERSIONS [null=VERSIONS] [tag=N tagv=VERSIONS]
              [default=VALUE] [ignorable]

TYPE is one of int8 int16 int32 int64 uint16 uint32 float64 bool uuid string
bytes records, a struct name, or `[]` + one of those (an array). A struct-
typed field either has its own fields indented below it (the struct is
defined there) or names a common struct.

    struct NAME v=VERSIONS

indented one level under a message defines a common (reusable) struct; its
fields follow one level deeper.

VERSIONS: `N+` (N and later), `N-M`, `N`, or `none`.
`null=` lists the versions in which the field may be null (strings, bytes,
arrays, struct fields; a nullable struct field is held by pointer in C).
`tag=`/`tagv=` make the field a tagged field in those (flexible) versions.
`default=` gives a non-zero default: an integer (decimal or 0x hex), true/
false, a string (`""` is the empty string) or `null`.
`ignorable`: the field may be silently dropped when encoding a version that
lacks it; writing a non-default value of a non-ignorable field into such a
version is KP_ERR_UNSUPPORTED.

GENERATED NAMES
===============
snake(x) is the rule below. For a message NAME (API A, kind request):
type kp_<snake A>_request_t, nested struct S: kp_<snake A>_request_<snake S>_t,
descriptor kp_<...>_desc, functions kp_<...>_init/_decode/_encode/_size.
Standalone message M: kp_<snake M>_t and kp_<snake M>_<snake S>_t.
Enum kp_api_key_t: KP_API_<UPPER SNAKE A> = KEY.
"""
import argparse
import os
import re
import sys

PRIMS = {
    # type: (C type, engine enum, fixed wire size or None)
    "int8": ("int8_t", "KP_T_INT8"), "int16": ("int16_t", "KP_T_INT16"),
    "int32": ("int32_t", "KP_T_INT32"), "int64": ("int64_t", "KP_T_INT64"),
    "uint16": ("uint16_t", "KP_T_UINT16"), "uint32": ("uint32_t", "KP_T_UINT32"),
    "float64": ("double", "KP_T_FLOAT64"), "bool": ("bool", "KP_T_BOOL"),
    "uuid": ("kp_uuid_t", "KP_T_UUID"), "string": ("kp_str_t", "KP_T_STRING"),
    "bytes": ("kp_bytes_t", "KP_T_BYTES"), "records": ("kp_records_t", "KP_T_RECORDS"),
}
C_KEYWORDS = set("""auto break case char const continue default do double else enum
extern float for goto if inline int long register restrict return short signed sizeof
static struct switch typedef union unsigned void volatile while bool true false""".split())
VMAX = 0x7fff


def snake(name):
    s = re.sub(r'([A-Z]+)([A-Z][a-z])', r'\1_\2', name)
    return re.sub(r'(?<=[a-z0-9])([A-Z])', r'_\1', s).lower()


class SchemaError(Exception):
    pass


def parse_versions(s, where):
    if s == "none":
        return (VMAX, -1)
    m = re.fullmatch(r'(\d+)(\+|-(\d+))?', s)
    if not m:
        raise SchemaError("%s: bad versions %r" % (where, s))
    lo = int(m.group(1))
    if m.group(2) == "+":
        return (lo, VMAX)
    hi = int(m.group(3)) if m.group(3) else lo
    if hi < lo:
        raise SchemaError("%s: empty range %r" % (where, s))
    return (lo, hi)


class Field:
    def __init__(self, name, ftype, attrs, where):
        self.name, self.type, self.where = name, ftype, where
        self.children = []
        self.versions = parse_versions(attrs.pop("v", "none"), where)
        self.nullable = parse_versions(attrs.pop("null", "none"), where)
        self.tag = int(attrs.pop("tag")) if "tag" in attrs else -1
        self.tagv = parse_versions(attrs.pop("tagv", "none"), where)
        self.default = attrs.pop("default", None)
        self.ignorable = attrs.pop("ignorable", None) is not None
        if self.tag >= 0 and self.tagv[0] > self.tagv[1]:
            raise SchemaError("%s: tag without tagv" % where)
        if attrs:
            raise SchemaError("%s: unknown attributes %s" % (where, sorted(attrs)))
        self.cname = snake(name)
        if self.cname in C_KEYWORDS:
            raise SchemaError("%s: field name is a C keyword" % where)

    @property
    def elem(self):
        return self.type[2:] if self.type.startswith("[]") else self.type

    @property
    def is_array(self):
        return self.type.startswith("[]")


class Message:
    def __init__(self, kind, name, attrs, where):
        self.kind, self.name, self.where = kind, name, where
        self.api = int(attrs.pop("api")) if "api" in attrs else None
        self.valid = parse_versions(attrs.pop("valid"), where)
        self.flex = parse_versions(attrs.pop("flexible"), where)
        self.unstable = attrs.pop("unstable", None) is not None
        if attrs:
            raise SchemaError("%s: unknown attributes %s" % (where, sorted(attrs)))
        self.fields = []
        self.common = {}   # name -> list of fields
        if kind == "message":
            self.api_name = name
            self.prefix = "kp_" + snake(name)
        else:
            suffix = "Request" if kind == "request" else "Response"
            if not name.endswith(suffix) or self.api is None:
                raise SchemaError("%s: %s name must end in %s and have api=" % (where, kind, suffix))
            self.api_name = name[:-len(suffix)]
            self.prefix = "kp_%s_%s" % (snake(self.api_name), kind)


def split_line(line):
    body = line.split("#", 1)[0].rstrip()
    indent = len(body) - len(body.lstrip(" "))
    toks = body.split()
    attrs, words = {}, []
    for t in toks:
        if "=" in t:
            k, v = t.split("=", 1)
            attrs[k] = "" if v == '""' else v
        elif t in ("ignorable", "unstable"):
            attrs[t] = ""
        else:
            words.append(t)
    return indent, words, attrs


def parse_file(path):
    msgs = []
    stack = []   # (indent, children list)
    with open(path) as f:
        lines = f.read().splitlines()
    for no, line in enumerate(lines, 1):
        where = "%s:%d" % (path, no)
        if not line.split("#", 1)[0].strip():
            continue
        indent, words, attrs = split_line(line)
        if indent % 2:
            raise SchemaError("%s: odd indentation" % where)
        if indent == 0:
            if len(words) != 2 or words[0] not in ("request", "response", "message"):
                raise SchemaError("%s: expected a message header" % where)
            msg = Message(words[0], words[1], attrs, where)
            msgs.append(msg)
            stack = [(0, msg.fields)]
            continue
        if not stack:
            raise SchemaError("%s: field outside a message" % where)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack or stack[-1][0] != indent - 2:
            raise SchemaError("%s: bad indentation" % where)
        if words[0] == "struct" and indent == 2:
            if len(words) != 2:
                raise SchemaError("%s: struct NAME v=..." % where)
            attrs.pop("v", None)
            fl = []
            msgs[-1].common[words[1]] = fl
            stack.append((indent, fl))
            continue
        if len(words) != 2:
            raise SchemaError("%s: expected NAME TYPE attrs" % where)
        fd = Field(words[0], words[1], attrs, where)
        stack[-1][1].append(fd)
        stack.append((indent, fd.children))
    return msgs


class Struct:
    def __init__(self, msg, name, fields, top):
        self.msg, self.name, self.fields, self.top = msg, name, fields, top
        self.ctype = msg.prefix + ("" if top else "_" + snake(name))


def collect_structs(msg):
    """Returns structs in dependency order (children first), top last."""
    defined = {}

    def visit_fields(fields):
        for fd in fields:
            e = fd.elem
            if e in PRIMS:
                if fd.children:
                    raise SchemaError("%s: primitive with fields" % fd.where)
                continue
            if fd.children:
                if e in defined or e in msg.common:
                    raise SchemaError("%s: struct %s defined twice" % (fd.where, e))
                defined[e] = Struct(msg, e, fd.children, False)
                visit_fields(fd.children)
            elif e not in msg.common:
                raise SchemaError("%s: unknown type %s" % (fd.where, e))

    for name, fl in msg.common.items():
        defined[name] = Struct(msg, name, fl, False)
    for fl in msg.common.values():
        visit_fields(fl)
    visit_fields(msg.fields)
    order, state = [], {}

    def emit(s):
        if state.get(s.name) == 2:
            return
        if state.get(s.name) == 1:
            raise SchemaError("%s: recursive struct %s" % (msg.where, s.name))
        state[s.name] = 1
        for fd in s.fields:
            if fd.elem not in PRIMS:
                emit(defined[fd.elem])
        state[s.name] = 2
        order.append(s)

    top = Struct(msg, msg.name, msg.fields, True)
    for s in list(defined.values()):
        emit(s)
    for fd in msg.fields:
        if fd.elem not in PRIMS:
            emit(defined[fd.elem])
    order.append(top)
    return order, defined


def c_default(fd, where):
    """Returns (def_int, def_f64, def_str C expression, default_null flag)."""
    d = fd.default
    e = fd.elem
    if d is None:
        if e == "string" and not fd.is_array:
            return "0", "0", '""', False
        return "0", "0", "NULL", False
    if d == "null":
        if fd.nullable[0] > fd.nullable[1]:
            raise SchemaError("%s: default null on a non-nullable field" % where)
        return "0", "0", "NULL", True
    if fd.is_array:
        raise SchemaError("%s: arrays only take default=null" % where)
    if e == "bool":
        if d not in ("true", "false"):
            raise SchemaError("%s: bad bool default" % where)
        return ("1" if d == "true" else "0"), "0", "NULL", False
    if e in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        v = int(d, 0)
        return ("INT64_C(%d)" % v), "0", "NULL", False
    if e == "float64":
        return "0", repr(float(d)), "NULL", False
    if e == "string":
        if not re.fullmatch(r'[A-Za-z0-9 _.\-]*', d):
            raise SchemaError("%s: unsupported string default" % where)
        return "0", "0", '"%s"' % d, False
    raise SchemaError("%s: default not supported for %s" % (where, fd.type))


def vr(r):
    return "%d, %d" % (r[0], r[1])


def gen(msgs):
    h, c = [], []
    h.append("/* kp_msgs.h — GENERATED by protocol/gen/kpgen.py from protocol/schema/NAME.kps."
             " Do not edit. */")
    h.append("#ifndef SKIFF_KP_MSGS_H\n#define SKIFF_KP_MSGS_H\n")
    h.append('#include "protocol/kp_codec.h"\n')
    apis = {}
    for m in msgs:
        if m.api is not None:
            a = apis.setdefault(m.api, {"name": m.api_name})
            if a["name"] != m.api_name or m.kind in a:
                raise SchemaError("%s: api %d declared twice" % (m.where, m.api))
            a[m.kind] = m
    for key, a in apis.items():
        if "request" not in a or "response" not in a:
            raise SchemaError("api %s lacks a request or response" % a["name"])
        if a["request"].valid != a["response"].valid or a["request"].flex != a["response"].flex:
            raise SchemaError("api %s: request/response versions differ" % a["name"])
    h.append("typedef enum {")
    for key in sorted(apis):
        h.append("    KP_API_%s = %d," % (snake(apis[key]["name"]).upper(), key))
    h.append("} kp_api_key_t;\n")
    h.append("#define KP_API_KEY_MAX %d\n" % max(apis))

    c.append("/* kp_msgs.c — GENERATED by protocol/gen/kpgen.py. Do not edit. */")
    c.append("#include <stddef.h>\n#include \"kp_msgs.h\"\n")
    all_structs = []
    for m in msgs:
        order, defined = collect_structs(m)
        for s in order:
            all_structs.append(s)
            s.defined = defined
    seen = set()
    for s in all_structs:
        if s.ctype in seen:
            raise SchemaError("duplicate C type %s" % s.ctype)
        seen.add(s.ctype)
        h.append("extern const kp_struct_desc_t %s_desc;" % s.ctype)
    h.append("")
    for s in all_structs:
        emit_struct(s, h, c)
    emit_registry(apis, msgs, h, c)
    h.append("\n#endif")
    return "\n".join(h) + "\n", "\n".join(c) + "\n"


def field_ctype(s, fd):
    e = fd.elem
    base = PRIMS[e][0] if e in PRIMS else s.defined[e].ctype + "_t"
    if fd.is_array:
        return "KP_ARRAY(%s) " % base
    if e not in PRIMS and fd.nullable[0] <= fd.nullable[1]:
        return base + " *"
    return base + " "


def emit_struct(s, h, c):
    m = s.msg
    h.append("typedef struct %s {" % s.ctype)
    if not s.fields:
        h.append("    char unused_;  /* no fields in any version */")
    for fd in s.fields:
        h.append("    %s%s;" % (field_ctype(s, fd), fd.cname))
    h.append("} %s_t;\n" % s.ctype)
    rows = []
    for fd in s.fields:
        where = "%s field %s" % (m.where, fd.name)
        e = fd.elem
        di, df, ds, dnull = c_default(fd, where)
        flags = []
        if fd.ignorable:
            flags.append("KP_FD_IGNORABLE")
        if dnull:
            flags.append("KP_FD_DEFAULT_NULL")
        if e not in PRIMS and not fd.is_array and fd.nullable[0] <= fd.nullable[1]:
            flags.append("KP_FD_PTR")
        if fd.is_array:
            typ, elem = "KP_T_ARRAY", (PRIMS[e][1] if e in PRIMS else "KP_T_STRUCT")
        else:
            typ, elem = (PRIMS[e][1] if e in PRIMS else "KP_T_STRUCT"), "0"
        sub = "&%s_desc" % s.defined[e].ctype if e not in PRIMS else "NULL"
        rows.append('    { "%s", offsetof(%s_t, %s), %s, %s, %s, %s, %s, %s, %d, %s, %s, %s, %s },'
                    % (fd.cname, s.ctype, fd.cname, typ, elem, " | ".join(flags) or "0",
                       vr(fd.versions), vr(fd.nullable), vr(fd.tagv), fd.tag, di, df, ds, sub))
    tagged = sorted((fd.tag, i) for i, fd in enumerate(s.fields) if fd.tag >= 0)
    tags = [t for t, _ in tagged]
    if len(set(tags)) != len(tags):
        raise SchemaError("%s: duplicate tag in %s" % (m.where, s.name))
    if rows:
        c.append("static const kp_field_desc_t %s_fields[] = {\n%s\n};" % (s.ctype, "\n".join(rows)))
    if tagged:
        c.append("static const uint16_t %s_tags[] = { %s };"
                 % (s.ctype, ", ".join(str(i) for _, i in tagged)))
    c.append('const kp_struct_desc_t %s_desc = { "%s", sizeof(%s_t), %d, %d, %s, %s, %s, %s };\n'
             % (s.ctype, s.name, s.ctype, len(s.fields), len(tagged),
                ("%s_fields" % s.ctype) if rows else "NULL",
                ("%s_tags" % s.ctype) if tagged else "NULL", vr(m.valid), vr(m.flex)))
    t = s.ctype
    h.append("static inline void %s_init(%s_t *m) { kp_msg_init(&%s_desc, m); }" % (t, t, t))
    if s.top:
        h.append("KP_MUST_CHECK static inline int %s_decode(kp_rd_t *r, int16_t version, %s_t *out, "
                 "kp_arena_t *a) {\n    return kp_decode(&%s_desc, r, version, out, a);\n}" % (t, t, t))
        h.append("KP_MUST_CHECK static inline int %s_encode(kp_wr_t *w, int16_t version, const %s_t *in) {"
                 "\n    return kp_encode(&%s_desc, w, version, in, NULL);\n}" % (t, t, t))
        h.append("KP_MUST_CHECK static inline int %s_size(int16_t version, const %s_t *in, size_t *size_bytes) {"
                 "\n    return kp_encoded_size(&%s_desc, version, in, size_bytes);\n}" % (t, t, t))
    h.append("")


def emit_registry(apis, msgs, h, c):
    rows = []
    for key in sorted(apis):
        a = apis[key]
        rq, rs = a["request"], a["response"]
        first_flex = rq.flex[0] if rq.flex[0] <= rq.flex[1] else -1
        stable_max = rq.valid[1] - 1 if rq.unstable else rq.valid[1]
        rows.append('    { %d, "%s", %d, %d, %d, %d, %d, %d, &%s_desc, &%s_desc },'
                    % (key, a["name"], rq.valid[0], rq.valid[1], stable_max, first_flex, rq.flex[0],
                       rq.flex[1], rq.prefix, rs.prefix))
    c.append("static const kp_api_info_t api_table[] = {\n%s\n};" % "\n".join(rows))
    c.append("const size_t kp_api_count = %d;" % len(rows))
    c.append("static const int16_t api_index[KP_API_KEY_MAX + 1] = {")
    idx = ["-1"] * (max(apis) + 1)
    for i, key in enumerate(sorted(apis)):
        idx[key] = str(i)
    c.append("    " + ", ".join(idx) + "\n};")
    c.append("const kp_api_info_t *kp_api_at(size_t i) { return i < kp_api_count ? &api_table[i] : NULL; }")
    c.append("const kp_api_info_t *kp_api_info(int16_t api_key) {\n"
             "    if (api_key < 0 || api_key > KP_API_KEY_MAX || api_index[api_key] < 0) return NULL;\n"
             "    return &api_table[api_index[api_key]];\n}")
    stand = [m for m in msgs if m.kind == "message"]
    c.append("static const kp_struct_desc_t *const standalone[] = { %s };"
             % ", ".join("&%s_desc" % m.prefix for m in stand))
    c.append("const kp_struct_desc_t *kp_message_desc(const char *name) {\n"
             "    for (size_t i = 0; i < sizeof standalone / sizeof standalone[0]; i++)\n"
             "        if (strcmp(standalone[i]->name, name) == 0) return standalone[i];\n"
             "    return NULL;\n}")
    c.insert(1, "#include <string.h>")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("schemas", nargs="+")
    a = ap.parse_args()
    try:
        msgs = []
        for p in a.schemas:
            msgs.extend(parse_file(p))
        hdr, src = gen(msgs)
    except SchemaError as e:
        print("kpgen: %s" % e, file=sys.stderr)
        return 1
    os.makedirs(a.out, exist_ok=True)
    for name, text in (("kp_msgs.h", hdr), ("kp_msgs.c", src)):
        tmp = os.path.join(a.out, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(a.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
