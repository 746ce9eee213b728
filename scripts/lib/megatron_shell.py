"""megatron_shell.py - reads a shell launch script without running it, for
scripts/tools/npusim-from-args: the lexer (quotes, line continuations, here
documents, $(...) and `...` kept as text), the expansion of VAR=value and
arrays VAR=(...) in order ($VAR, ${VAR:-default}, ${ARR[@]}, $((arithmetic)),
word splitting as the shell splits), and training_commands(text), the
commands that carry --num-layers with their words expanded (Field).

A value the script does not fix ($1, an unset variable, $(cmd), a variable set
inside if / case / a loop or after && / ||) stands in the text as a marker
(Field.unknown says why), never a guess. Every value is charged before it is
built (charge, MAX_EXPANSION_CHARS), so time and memory stay in proportion to
the input. It does not know Megatron's flags (megatron_args.py maps them) and
never runs a command. Python 3 standard library only."""

import ast
import os
import re

FSDP2_PROGRAM = "train_fsdp2.py"   # MindSpeed-LLM's FSDP2 trainer (fsdp2_args.py)

MAX_INPUT_BYTES = 1 << 20      # a launch script is a few KiB
# What expanding the script may produce in all, in characters (a field counts
# FIELD_CHARS more): a script's own expansions come to about its size, so
# only a variable or array that doubles itself line after line (A="$A$A")
# reaches it. Every value is charged before it is built, so memory and time
# stay in proportion to this bound, whatever the script.
MAX_EXPANSION_CHARS = 32 * MAX_INPUT_BYTES
FIELD_CHARS = 32               # a Field object and its list slot, in characters
INT64 = 1 << 63                # bash's arithmetic is signed 64-bit


class InputError(Exception):
    """Bad input: the message is the one line the user sees (exit 2)."""


def one_line(text):
    """text with line breaks and other control characters escaped."""
    return "".join(c if c.isprintable() or c == " " else
                   c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in str(text))


def shorten(text, n=60):
    text = str(text)
    return repr(text if len(text) <= n else text[:n] + "...")


# ---------------------------------------------------------------------------
# Reading a shell script without running it.
#
# The lexer turns the text into commands (line, words); a word is a list of
# parts: ("lit", text, quoted), ("var", name, quoted), ("brace", inner, quoted),
# ("arith", inner, quoted), ("cmd", source, quoted) for $(...) and `...`,
# ("special", char, quoted) for $1 $@ $# ..., and ("array", name, append,
# [words]) for NAME=(...) / NAME+=(...). While a word is being read its
# literal parts are ["lit*", [chunks], quoted], joined once when it ends
# (finish_word): joining at every character would take time quadratic in a
# long word.
# ---------------------------------------------------------------------------

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGN_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
HEREDOC_RE = re.compile(r"['\"]?([^\s'\";&|<>()]*)['\"]?")
# Runs of characters with no meaning in their context, read at once (a
# character at a time, a long word would take seconds).
PLAIN_RUN = re.compile(r"[^ \t\r\n\\'\"`$()<>;&|#]+")
DQUOTED_RUN = re.compile(r"[^\"\\$`]+")
BACKQUOTED_RUN = re.compile(r"[^`\\]+")
BALANCED_RUN = {"(": re.compile(r"[^\\'\"()]+"), "{": re.compile(r"[^\\'\"{}]+")}
PARTS_RUN = re.compile(r"[^$\\\"']+")
QUOTED_RUN = {"'": re.compile(r"[^']+"), '"': re.compile(r'[^"\\]+')}


class Command:
    def __init__(self, line, words, conditional):
        self.line = line                # 1-based line of its first word
        self.words = words
        self.conditional = conditional  # runs only after && or ||


class Lexer:
    def __init__(self, text):
        self.s = text
        self.i = 0
        self.line = 1
        self.sep = ""         # what ended the last command: ; && || | & or a newline
        self.heredocs = []    # delimiters of here-documents that start after this line

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def take(self):
        c = self.s[self.i]
        self.i += 1
        if c == "\n":
            self.line += 1
        return c

    def take_run(self, regex):
        """The run of characters REGEX matches here (may be empty), taken."""
        m = regex.match(self.s, self.i)
        if not m:
            return ""
        self.i = m.end()
        self.line += m.group().count("\n")
        return m.group()

    def take_until(self, c):
        """The text up to the next C (or the end), taken; C is not."""
        end = self.s.find(c, self.i)
        end = len(self.s) if end < 0 else end
        text = self.s[self.i:end]
        self.i = end
        self.line += text.count("\n")
        return text

    def commands(self):
        """Every simple command of the script, in order, one at a time (held
        all at once, a script of many short commands takes 200 bytes each)."""
        while self.i < len(self.s):
            conditional = self.sep in ("&&", "||")
            line, words = self.words_until(top=True)
            if words:
                yield Command(line, words, conditional)

    def skip_heredocs(self):
        """Skips the bodies of the here-documents opened on the line just ended."""
        for delim in self.heredocs:
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                body_line = self.s[self.i:end]
                self.i = end
                if self.i < len(self.s):
                    self.take()
                if body_line.lstrip("\t") == delim:
                    break
        self.heredocs = []

    def words_until(self, top):
        """Words up to the end of a command (top) or up to a closing ')'
        (inside an array). Returns (line of the first word, words)."""
        words, word, first_line = [], None, None
        skip_next = False   # the next word is a redirection's target

        def end_word():
            nonlocal word, skip_next
            if word is not None:
                if skip_next:
                    skip_next = False
                else:
                    words.append(finish_word(word))
                word = None

        def start():
            nonlocal word, first_line
            if word is None:
                word = []
                if first_line is None:
                    first_line = self.line
            return word

        while self.i < len(self.s):
            c = self.peek()
            if c == "\\" and self.peek(1) == "\n":
                self.take(), self.take()
            elif c == "\\":
                self.take()
                if self.i < len(self.s):
                    add_lit(start(), self.take(), True)
            elif c in " \t\r":
                self.take()
                end_word()
            elif c == "\n":
                self.take()
                end_word()
                self.skip_heredocs()
                if top:
                    self.sep = "\n"
                    break
            elif c == "#" and word is None:
                self.take_until("\n")
            elif c == "'":
                self.take()
                w = start()
                text = self.take_until("'")
                if self.i >= len(self.s):
                    raise InputError(f"line {self.line}: a single quote is not closed")
                self.take()
                add_lit(w, text, True)
            elif c == '"':
                self.take()
                self.double_quoted(start())
            elif c == "`":
                self.take()
                start().append(("cmd", "`" + self.backquoted() + "`", False))
            elif c == "$":
                self.dollar(start(), False)
            elif c == "(" and word is not None and len(word) == 1 and word[0][0] == "lit*" \
                    and not word[0][2] and ASSIGN_RE.fullmatch("".join(word[0][1])):
                self.take()
                m = ASSIGN_RE.fullmatch("".join(word[0][1]))
                _, elems = self.words_until(top=False)
                word[:] = [("array", m.group(1), m.group(2) == "+", elems)]
            elif c == ")":
                self.take()
                end_word()
                if not top:
                    return first_line, words
            elif c == "(":
                self.take()
                end_word()
            elif c in ";&|":
                sep = self.take()
                while self.peek() == c:
                    sep += self.take()
                end_word()
                if top:
                    self.sep = sep
                    break
            elif c in "<>":
                # a redirection: drop an fd number before it and its target
                if word is not None and len(word) == 1 and word[0][0] == "lit*" \
                        and not word[0][2] and "".join(word[0][1]).isdigit():
                    word = None
                else:
                    end_word()
                op = ""
                while self.peek() in ("<", ">", "&"):
                    op += self.take()
                skip_next = True
                if op == "<<":
                    if self.peek() == "-":
                        self.take()
                    while self.peek() in (" ", "\t"):
                        self.take()
                    m = HEREDOC_RE.match(self.s, self.i)
                    self.heredocs.append(m.group(1))
            else:
                add_lit(start(), self.take_run(PLAIN_RUN) or self.take(), False)
        if not top:
            raise InputError(f"line {self.line}: an array's '(' is not closed")
        end_word()
        return first_line, words

    def double_quoted(self, word):
        while True:
            if self.i >= len(self.s):
                raise InputError(f"line {self.line}: a double quote is not closed")
            c = self.peek()
            if c == '"':
                self.take()
                add_lit(word, "", True)   # "" is an empty word, not none
                return
            if c == "\\":
                self.take()
                n = self.peek()
                if n == "\n":
                    self.take()
                elif n in ('"', "\\", "$", "`"):
                    add_lit(word, self.take(), True)
                else:
                    add_lit(word, "\\", True)
            elif c == "$":
                self.dollar(word, True)
            elif c == "`":
                self.take()
                word.append(("cmd", "`" + self.backquoted() + "`", True))
            else:
                add_lit(word, self.take_run(DQUOTED_RUN), True)

    def backquoted(self):
        buf = []
        while self.i < len(self.s) and self.peek() != "`":
            if self.peek() == "\\":
                buf.append(self.take())
            if self.i < len(self.s):
                buf.append(self.take_run(BACKQUOTED_RUN) or self.take())
        if self.i >= len(self.s):
            raise InputError(f"line {self.line}: a backquote is not closed")
        self.take()
        return "".join(buf)

    def balanced(self, open_c, close_c):
        """Text up to the close_c that matches an open_c already taken."""
        depth, buf = 1, []
        while self.i < len(self.s):
            buf.append(self.take_run(BALANCED_RUN[open_c]))
            if self.i >= len(self.s):
                break
            c = self.take()
            if c == "\\" and self.i < len(self.s):
                buf.append(c)
                buf.append(self.take())
                continue
            if c in "'\"":
                buf.append(c)
                while self.i < len(self.s) and self.peek() != c:
                    if c == '"' and self.peek() == "\\":
                        buf.append(self.take())
                    if self.i < len(self.s):
                        buf.append(self.take_run(QUOTED_RUN[c]) or self.take())
                if self.i < len(self.s):
                    buf.append(self.take())
                continue
            if c == open_c:
                depth += 1
            elif c == close_c:
                depth -= 1
                if depth == 0:
                    return "".join(buf)
            buf.append(c)
        raise InputError(f"line {self.line}: a '{open_c}' is not closed")

    def dollar(self, word, quoted):
        self.take()   # $
        c = self.peek()
        if c == "(" and self.peek(1) == "(":
            self.take(), self.take()
            inner = self.balanced("(", ")")
            if self.peek() != ")":   # $( (subshell) ... ): a command substitution
                word.append(("cmd", "$((" + inner + ")", quoted))
                return
            self.take()
            word.append(("arith", inner, quoted))
        elif c == "(":
            self.take()
            word.append(("cmd", "$(" + self.balanced("(", ")") + ")", quoted))
        elif c == "{":
            self.take()
            word.append(("brace", self.balanced("{", "}"), quoted))
        elif c and (c.isalpha() or c == "_"):
            m = NAME_RE.match(self.s, self.i)
            for _ in range(m.end() - self.i):
                self.take()
            word.append(("var", m.group(0), quoted))
        elif c and (c.isdigit() or c in "@*#?$!-"):
            word.append(("special", self.take(), quoted))
        else:
            add_lit(word, "$", quoted)


def add_lit(word, text, quoted):
    """Literal text to the word being read (see finish_word)."""
    if word and word[-1][0] == "lit*" and word[-1][2] == quoted:
        word[-1][1].append(text)
    else:
        word.append(["lit*", [text], quoted])


def finish_word(word):
    """The word with each literal part's chunks joined: ("lit", text, quoted)."""
    for k, p in enumerate(word):
        if p[0] == "lit*":
            word[k] = ("lit", "".join(p[1]), p[2])
    return word


def parse_parts(text, quoted):
    """The parts of a word written inside ${NAME:-...} or $((...))."""
    charge(len(text), 0)   # read again at each expansion: nested defaults
    lx = Lexer(text)
    word = []
    while lx.i < len(lx.s):
        c = lx.peek()
        if c == "$":
            lx.dollar(word, quoted)
        elif c == "\\" and lx.i + 1 < len(lx.s):
            lx.take()
            add_lit(word, lx.take(), True)
        elif c == '"' and not quoted:
            lx.take()
            lx.double_quoted(word)
        elif c == "'" and not quoted:
            lx.take()
            buf = []
            while lx.i < len(lx.s) and lx.peek() != "'":
                buf.append(lx.take())
            if lx.i < len(lx.s):
                lx.take()
            add_lit(word, "".join(buf), True)
        else:
            add_lit(word, lx.take_run(PARTS_RUN) or lx.take(), quoted)
    return finish_word(word)


# ---- expansion ----

# An expansion whose value the script does not fix ($1, an unset variable,
# $(cmd)) stands in the text as a marker, so that splitting and joining carry
# it along; a flag that needs such a value is refused with the reason.
UNKNOWN = []                     # (source text, reason) per marker
MARK_RE = re.compile("\ue000(\\d+)\ue001")
MARK_CHARS = re.compile("[\ue000\ue001]")
SHOWN_CHARS = 1000               # a value as written: as much as a message or _source shows


class Expansion:
    """What expanding the script may still produce (MAX_EXPANSION_CHARS),
    and the line of the command being expanded, for the message."""
    left = MAX_EXPANSION_CHARS
    line = 0


def charge(chars, fields=1):
    """Counts text about to be built; refuses the script past the bound."""
    Expansion.left -= chars + fields * FIELD_CHARS
    if Expansion.left < 0:
        raise InputError(f"line {Expansion.line}: expected expansions of at most "
                         f"{MAX_EXPANSION_CHARS >> 20} Mi characters in all (a launch script's "
                         "come to about its own size), found more (as when a variable or an "
                         "array doubles itself: A=\"$A$A\")")


def unknown(source, reason):
    charge(len(source) + len(reason))
    UNKNOWN.append((source, reason))
    return Field(f"\ue000{len(UNKNOWN) - 1}\ue001")


class Field:
    """One word after expansion."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    @property
    def unknown(self):
        """Why the text is not the value the shell would see; None when it is."""
        m = MARK_RE.search(self.text)
        return UNKNOWN[int(m.group(1))][1] if m else None

    @property
    def shown(self):
        """The text with each unknown expansion written as in the script, cut
        after SHOWN_CHARS (markers may stand for long sources: the whole
        could be far larger than the text)."""
        out, n, at = [], 0, 0
        for m in MARK_RE.finditer(self.text):
            for piece in (self.text[at:m.start()], UNKNOWN[int(m.group(1))][0]):
                out.append(piece[:SHOWN_CHARS - n])
                n += len(out[-1])
            at = m.end()
            if n >= SHOWN_CHARS:
                return "".join(out)
        out.append(self.text[at:at + SHOWN_CHARS - n])
        return "".join(out)


class Cond:
    """A variable set inside if / case / a loop or after && / ||: its value
    is not known."""

    def __init__(self, line):
        self.line = line


def part_source(part):
    kind = part[0]
    if kind == "var":
        return "$" + part[1]
    if kind == "brace":
        return "${" + part[1] + "}"
    if kind == "arith":
        return "$((" + part[1] + "))"
    if kind == "special":
        return "$" + part[1]
    return part[1]


def lookup(env, name, source):
    """A variable's value: Field, list of Field (an array) or an unknown Field."""
    v = env.get(name)
    if v is None:
        return unknown(source, f"{source} is not set in the script")
    if isinstance(v, Cond):
        return unknown(source, f"{source} is set only in some runs (line {v.line}: inside "
                               "if, case or a loop, or after && or ||)")
    return v


def expand_part(part, env):
    """An expansion's value: a Field or a list of Field (arrays)."""
    kind, src = part[0], part_source(part)
    if kind == "var":
        v = lookup(env, part[1], src)
        return v[0] if isinstance(v, list) and v else (Field("") if isinstance(v, list) else v)
    if kind == "special":
        positional = part[1].isdigit() or part[1] in "@*#"
        what = "a positional parameter" if positional else "set at run time"
        return unknown(src, f"{src} is {what}")
    if kind == "cmd":
        return unknown(src, f"{shorten(src, 40)} is a command substitution, not run")
    if kind == "arith":
        return arith(part[1], env, src)
    if kind == "brace":
        return expand_brace(part[1], env, src, part[2])
    raise AssertionError(kind)


BRACE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\]]*)\])?(?:(:?)([-=+?])(.*))?", re.S)


def expand_brace(inner, env, src, quoted):
    m = BRACE_RE.fullmatch(inner)
    if not m:
        return unknown(src, f"{shorten(src, 40)} is not evaluated")
    name, index, colon, op, rest = m.groups()
    v = env.get(name)
    if isinstance(v, Cond) or (v is None and not op):
        return lookup(env, name, src)
    if index is not None and v is not None:
        elems = v if isinstance(v, list) else [v]
        if index in ("@", "*"):
            if index == "*":
                charge(sum(len(e.text) + 1 for e in elems))
            v = elems if index == "@" else Field(" ".join(e.text for e in elems))
        elif index.strip().isdigit():
            k = int(index)
            v = elems[k] if k < len(elems) else None
        else:
            return unknown(src, f"{shorten(src, 40)} is not evaluated")
    elif isinstance(v, list):
        v = v[0] if v else Field("")
    if not op:
        return v if v is not None else Field("")
    empty = v is None or (colon and isinstance(v, Field) and v.text == "" and not v.unknown)
    if op in "-=":
        if not empty:
            return v
        d = expand_text(parse_parts(rest, quoted), env)
        if op == "=":
            env[name] = d
        return d
    if op == "+":
        return Field("") if empty else expand_text(parse_parts(rest, quoted), env)
    return v if not empty else unknown(src, f"{src}: {name} is not set in the script")


def expand_text(parts, env):
    """A word's parts joined without field splitting (assignments, defaults)."""
    text = []
    for p in parts:
        if p[0] == "lit":
            text.append(p[1])
            continue
        v = expand_part(p, env)
        elems = v if isinstance(v, list) else [v]
        charge(sum(len(e.text) + 1 for e in elems), 0)
        text.append(" ".join(e.text for e in elems))
    charge(sum(map(len, text)))
    return Field("".join(text))


def expand_word(word, env):
    """A word's fields: unquoted expansions are split on blanks, "$@"-style
    arrays give one field per element, an unquoted expansion that is empty
    gives none."""
    fields = []
    cur, has = [], False

    def finish():
        nonlocal cur, has
        if has:
            charge(sum(map(len, cur)))
            fields.append(Field("".join(cur)))
        cur, has = [], False

    def add(f, quoted):
        nonlocal has
        if quoted:
            cur.append(f.text)
            has = True
            return
        text = f.text
        if text[:1].isspace():
            finish()
        charge(len(text), 0)
        chunks = text.split()
        for k, chunk in enumerate(chunks):
            if k:
                finish()
            cur.append(chunk)
            has = True
        if text[-1:].isspace():
            finish()

    for p in word:
        if p[0] == "lit":
            cur.append(p[1])
            has = has or p[2] or p[1] != ""
            continue
        if p[0] == "array":
            raise InputError(f"{p[1]}=( ... ) stands where a word is expected (bash refuses it)")
        v = expand_part(p, env)
        if isinstance(v, list):
            charge(0, len(v))
            for k, e in enumerate(v):
                if k:
                    finish()
                add(e, p[2])
        else:
            add(v, p[2])
    finish()
    return fields


def arith(inner, env, src):
    """$((...)) of integers, variables and + - * / % ** ( )."""
    f = expand_text(parse_parts(inner, True), env)
    if f.unknown:
        return unknown(src, f.unknown)

    def name_value(name, depth=0):
        v = lookup(env, name, "$" + name)
        if isinstance(v, list):
            v = v[0] if v else Field("0")
        if v.unknown:
            raise InputError(v.unknown)
        t = v.text.strip() or "0"
        if re.fullmatch(r"[+-]?\d+", t):
            return int(t)
        if depth < 8 and NAME_RE.fullmatch(t):
            return name_value(t, depth + 1)
        raise InputError(f"{src}: {name} is {shorten(t)}, not an integer")

    def ev(node):
        v = ev_node(node)
        if not -INT64 <= v < INT64:   # bash would wrap around: not the value meant
            raise InputError(f"{shorten(src, 40)} overflows bash's 64-bit integers")
        return v

    def ev_node(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return name_value(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            op = node.op
            if isinstance(op, ast.Add):
                return a + b
            if isinstance(op, ast.Sub):
                return a - b
            if isinstance(op, ast.Mult):
                return a * b
            if isinstance(op, (ast.Div, ast.Mod)) and b == 0:
                raise InputError(f"{src}: division by zero")
            if isinstance(op, ast.Div):
                q = abs(a) // abs(b)
                return q if (a >= 0) == (b >= 0) else -q
            if isinstance(op, ast.Mod):
                return a - b * (abs(a) // abs(b) if (a >= 0) == (b >= 0) else -(abs(a) // abs(b)))
            if isinstance(op, ast.Pow) and 0 <= b <= 64:
                return a ** b
        raise ValueError

    text = f.text.strip()
    if len(text) > 1000 or not re.fullmatch(r"[\sA-Za-z0-9_+\-*/%()]*", text) or "//" in text:
        return unknown(src, f"{shorten(src, 40)} is not evaluated")
    try:
        return Field(str(ev(ast.parse(text or "0", mode="eval"))))
    except InputError as e:
        return unknown(src, str(e))
    except (ValueError, SyntaxError, RecursionError):
        return unknown(src, f"{shorten(src, 40)} is not evaluated")


BLOCK_OPEN = ("if", "while", "until", "for", "case", "select", "{")
BLOCK_CLOSE = ("fi", "done", "esac", "}")
BLOCK_INNER = ("then", "else", "do")
DECLARERS = ("export", "declare", "typeset", "local", "readonly")
NOT_THE_RUN = ("echo", "printf", "[", "[[", "test", ":")


def plain(word):
    """A word's text when it is one unquoted literal, else None."""
    return word[0][1] if len(word) == 1 and word[0][0] == "lit" and not word[0][2] else None


def assignment(word):
    """(name, append, value parts) of NAME=value, or None."""
    if not word or word[0][0] != "lit" or word[0][2]:
        return None
    m = ASSIGN_RE.match(word[0][1])
    if not m:
        return None
    rest = word[0][1][m.end():]
    value = ([("lit", rest, False)] if rest else []) + list(word[1:])
    return m.group(1), m.group(2) == "+", value


def training_commands(text, programs=None):
    """The expanded words of every command that carries --num-layers (or runs
    MindSpeed's FSDP2 trainer, FSDP2_PROGRAM, whose model is a config file), with
    their lines, after following the script's assignments in order. A list
    given as programs gets the Python programs (words ending in .py) every
    other command runs, so a script with no training command can be told
    from one whose model is read from elsewhere."""
    env, depth, found = {}, 0, []
    lexer = Lexer(text)
    commands = lexer.commands()
    while True:
        try:
            cmd = next(commands, None)
        except RecursionError:
            raise InputError(f"line {lexer.line}: expected arrays nested at most a few hundred "
                             "deep, found deeper")
        if cmd is None:
            break
        Expansion.line = cmd.line
        words = cmd.words
        while words and plain(words[0]) in BLOCK_INNER:
            words = words[1:]
        if not words:
            continue
        head = plain(words[0])
        if head in BLOCK_OPEN or head == "elif":
            depth += head != "elif"
            continue
        if head in BLOCK_CLOSE:
            depth = max(0, depth - 1)
            continue
        if head in DECLARERS:
            words = [w for w in words[1:] if not (plain(w) or "").startswith("-")]
            assigns_only = True
        else:
            assigns_only = False
        k = 0
        pending = []
        while k < len(words):
            w = words[k]
            if w and w[0][0] == "array":
                pending.append(("array", w[0][1], w[0][2], w[0][3]))
            else:
                a = assignment(w)
                if a is None:
                    break
                pending.append(("scalar",) + a)
            k += 1
        if k < len(words) and not assigns_only:
            # VAR=x cmd ...: the assignments are the command's environment
            if plain(words[k]) == "unset":
                for w in words[k + 1:]:
                    env.pop(plain(w) or "", None)
                continue
            if plain(words[k]) in NOT_THE_RUN:
                continue
            fields = [f for w in words[k:] for f in expand_word(w, env)]
            if any(f.text == "--num-layers" or f.text.startswith("--num-layers=") or
                   os.path.basename(f.text) == FSDP2_PROGRAM for f in fields):
                found.append((cmd.line, fields))
            elif programs is not None:
                programs.extend(f.text for f in fields if f.text.endswith(".py"))
            continue
        for a in pending:
            if a[0] == "array":
                _, name, append, elems = a
                value = [f for w in elems for f in expand_word(w, env)]
                old = env.get(name)
                if append and isinstance(old, (list, Field)):
                    charge(0, len(value) + (len(old) if isinstance(old, list) else 1))
                    value = (old if isinstance(old, list) else [old]) + value
            else:
                _, name, append, parts = a
                value = expand_text(parts, env)
                old = env.get(name)
                if append and isinstance(old, Field):
                    charge(len(old.text) + len(value.text))
                    value = Field(old.text + value.text)
                elif append and isinstance(old, list):
                    charge(0, len(old) + 1)
                    value = old + [value]
            env[name] = Cond(cmd.line) if depth or cmd.conditional else value
    return found
