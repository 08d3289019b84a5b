#!/usr/bin/env python3
"""Lists the programs shell scripts call: a static scan for t_deps_complete.sh.

usage: deps_scan.py [--functions] SCRIPT...
  prints "COMMAND SCRIPT:LINE" for every literal word in command position
  (first word of a simple command, of a pipeline segment, of $(...) and
  `...`, after `then`/`do`/`!`/..., after the prefix commands exec, command,
  timeout, env, nohup, nice, xargs, and the X of `command -v X`);
  --functions prints the names of the shell functions the scripts define.

What it skips, and why: words that are not literal (`"$SK_PY"`, `$BIN/x`:
resolved at run time, the project's own programs), relative paths (project
files), assignments, redirection targets, `[[ ]]` and `(( ))` contents,
array literals, case patterns, and here-document bodies except those whose
delimiter says they are shell (SH, WRAP, SHELL): the others are Python,
JavaScript or config text. A reasonable scan, not a shell parser: an odd
construct it misreads shows up as an unknown command, never as silence
about a real one at the start of a line.
"""
import re
import sys

KEYWORDS_CMD_NEXT = {"then", "do", "else", "elif", "if", "while", "until", "!", "time", "{", "}"}
PREFIX = {"exec", "nohup", "nice", "setsid", "stdbuf", "xargs", "sudo"}
SHELL_HEREDOCS = {"SH", "WRAP", "SHELL"}
LITERAL = re.compile(r"^[A-Za-z0-9_./+-][A-Za-z0-9_./+:-]*$")
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")


class Lexer:
    """Tokens of a shell text: ('w', text, literal, line) and ('op', text, line)."""

    def __init__(self, text):
        self.s = text
        self.i = 0
        self.line = 1
        self.toks = []
        self.heredocs = []   # pending (delimiter, strip_tabs) after the current line

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def adv(self, n=1):
        for _ in range(n):
            if self.i < len(self.s) and self.s[self.i] == "\n":
                self.line += 1
            self.i += 1

    def skip_quoted(self, q):
        """At the opening quote; returns after the closing one. Inside "..."
        a $( ... ) is lexed as a nested command list."""
        self.adv()
        while self.i < len(self.s):
            c = self.peek()
            if c == "\\" and q == '"':
                self.adv(2)
                continue
            if c == q:
                self.adv()
                return
            if q == '"' and c == "$" and self.peek(1) == "(" and self.peek(2) != "(":
                self.adv(2)
                self.nested(")")
                continue
            if q == '"' and c == "`":
                self.adv()
                self.nested("`")
                continue
            self.adv()

    def nested(self, close):
        self.toks.append(("op", "(", self.line))
        self.lex(close)
        self.toks.append(("op", ")", self.line))

    def skip_balanced(self, open_c, close_c):
        depth = 1
        while self.i < len(self.s) and depth:
            c = self.peek()
            if c in "'\"":
                self.skip_quoted(c)
                continue
            if c == "\\":
                self.adv(2)
                continue
            depth += c == open_c
            depth -= c == close_c
            self.adv()

    def read_heredocs(self):
        for delim, strip in self.heredocs:
            body_start = self.i
            start_line = self.line
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                ln = self.s[self.i:end]
                if (ln.lstrip("\t") if strip else ln) == delim:
                    body = self.s[body_start:self.i]
                    self.adv(end - self.i + 1)
                    break
                self.adv(end - self.i + 1)
            else:
                body = self.s[body_start:]
            if delim in SHELL_HEREDOCS:
                sub = Lexer(body)
                sub.lex(None)
                for t in sub.toks:
                    self.toks.append(t[:-1] + (t[-1] + start_line - 1,))
                self.toks.append(("op", "\n", self.line))
        self.heredocs = []

    def lex(self, close):
        while self.i < len(self.s):
            c = self.peek()
            if close and c == close:
                self.adv()
                return
            if c == "\n":
                self.toks.append(("op", "\n", self.line))
                self.adv()
                if self.heredocs:
                    self.read_heredocs()
                continue
            if c in " \t":
                self.adv()
                continue
            if c == "\\" and self.peek(1) == "\n":
                self.adv(2)
                continue
            if c == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.adv()
                continue
            two = c + self.peek(1)
            if two == "((":
                self.adv(2)
                self.skip_balanced("(", ")")
                self.skip_balanced("(", ")")
                continue
            if two == "[[" and self.peek(2) in " \t":
                end = self.s.find("]]", self.i)
                self.adv((end + 2 - self.i) if end >= 0 else len(self.s) - self.i)
                continue
            if two in ("<<",) and self.peek(2) != "<":
                self.adv(2)
                strip = self.peek() == "-"
                if strip:
                    self.adv()
                while self.peek() in " \t":
                    self.adv()
                m = re.match(r"""['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?""", self.s[self.i:])
                if m:
                    self.heredocs.append((m.group(1), strip))
                    self.adv(m.end())
                continue
            if two in ("&&", "||", ";;", "|&", ">>", "<<", ">&", "<&", "&>"):
                self.toks.append(("op", two, self.line))
                self.adv(2)
                continue
            if c in ";|&()<>":
                self.toks.append(("op", c, self.line))
                self.adv()
                continue
            if c == "`":
                self.adv()
                self.nested("`")
                continue
            self.word()

    def word(self):
        start, line, literal = self.i, self.line, True
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\n;|&<>()":
                if c == "(" and ASSIGN.match(self.s[start:self.i]):
                    self.adv()   # array literal: not commands
                    self.skip_balanced("(", ")")
                    literal = False
                    continue
                break
            if c in "'\"":
                literal = False
                self.skip_quoted(c)
                continue
            if c == "\\":
                literal = False
                self.adv(2)
                continue
            if c == "$":
                literal = False
                if self.peek(1) == "(" and self.peek(2) == "(":
                    self.adv(3)
                    self.skip_balanced("(", ")")
                    self.skip_balanced("(", ")")
                    continue
                if self.peek(1) == "(":
                    self.adv(2)
                    self.nested(")")
                    continue
                if self.peek(1) == "{":
                    self.adv(2)
                    self.skip_balanced("{", "}")
                    continue
            if c == "`":
                literal = False
                self.adv()
                self.nested("`")
                continue
            self.adv()
        text = self.s[start:self.i]
        if text.isdigit() and self.peek() in "<>":
            return   # a file descriptor number: "2>&1", "3<>file"
        self.toks.append(("w", text, literal and bool(LITERAL.match(text)), line))


def commands(toks):
    """Yields (command, line) from a token stream."""
    at_cmd = True
    redirect = False
    case_state = []          # per open case: [state, depth of $( ) in it]; "word", "pattern", "body"
    prefix = None            # the prefix command whose target comes next
    for t in toks:
        if t[0] == "op":
            op = t[1]
            redirect = op in ("<", ">", ">>", ">&", "<&", "&>")
            if redirect:
                continue
            if case_state and case_state[-1][0] in ("word", "pattern"):
                st = case_state[-1]
                if op == "(":
                    st[1] += 1   # $(...) in the case word: commands
                elif op == ")" and st[1] > 0:
                    st[1] -= 1
                elif op == ")" and st[0] == "pattern":
                    st[0] = "body"
            elif op == ";;" and case_state:
                case_state[-1][0] = "pattern"
            at_cmd = op in (";", "|", "&", "&&", "||", "(", ")", "\n", ";;", "|&")
            prefix = None
            continue
        _, text, literal, line = t
        if redirect:
            redirect = False
            continue
        if case_state and case_state[-1][0] == "word" and case_state[-1][1] == 0:
            if text == "in":
                case_state[-1][0] = "pattern"
            continue
        if case_state and case_state[-1][0] == "pattern" and case_state[-1][1] == 0:
            if text == "esac":
                case_state.pop()
                at_cmd = False
            continue
        if not at_cmd:
            continue
        if ASSIGN.match(text):
            continue
        if text == "case":
            case_state.append(["word", 0])
            at_cmd = False
            continue
        if text == "esac" and case_state:
            case_state.pop()
            at_cmd = False
            continue
        if text in KEYWORDS_CMD_NEXT:
            continue
        if text in ("for", "select", "function"):
            at_cmd = False
            continue
        if prefix == "timeout" or prefix == "env":
            # options, then (timeout) the duration or (env) NAME=VALUE pairs
            if text.startswith("-") or (prefix == "timeout" and re.match(r"^[0-9.]+[smhd]?$", text)):
                continue
        if prefix in PREFIX and text.startswith("-"):
            continue
        if prefix == "command" and text.startswith("-"):
            continue
        if literal and (not "/" in text or text.startswith("/")):
            yield text, line
        if text in PREFIX or text in ("timeout", "env", "command", "type", "which", "hash"):
            prefix = text
            at_cmd = True
            continue
        at_cmd = False
        prefix = None


FUNC_DEF = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_:-]*)\s*\(\)\s*\{?", re.M)
FUNC_KW = re.compile(r"^\s*function\s+([A-Za-z_][A-Za-z0-9_:-]*)", re.M)


def main(argv):
    want_funcs = argv[:1] == ["--functions"]
    files = argv[1:] if want_funcs else argv
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if want_funcs:
            for m in FUNC_DEF.finditer(text):
                print(m.group(1))
            for m in FUNC_KW.finditer(text):
                print(m.group(1))
            continue
        lx = Lexer(text)
        lx.lex(None)
        for cmd, line in commands(lx.toks):
            print("%s %s:%d" % (cmd, path, line))


if __name__ == "__main__":
    main(sys.argv[1:])
