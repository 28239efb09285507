"""Secrets at write time (docs/design.md, section 4, step 5): refused or redacted, never stored.

How a text is scanned (:func:`find_secrets`):

1. It is normalised for matching only: NFKD (fullwidth ``ｇｈｐ_`` and mathematical
   ``𝐠𝐡𝐩_`` read ``ghp_``), combining marks dropped (``ǵhp_``, ``g`` + U+0301, reads
   ``ghp_``), format characters and fillers dropped (zero-width spaces and joiners,
   soft hyphens, BOMs, tags) and look-alike letters and dashes folded (Cyrillic
   ``р`` reads ``p``). Each normalised character remembers where it came from, so a
   redaction replaces the original span, obfuscation included.
2. Our patterns run first (case-insensitive: a lower-cased key is still a key):
   memchentic's own ``mck_`` keys, provider prefixes, private and PuTTY keys,
   ``NAME=value`` / ``"name": "value"`` / "my password is ..." assignments (a
   keyword joined by ``_``, as in ``DB_PASSWORD``, counts), credentials in URLs,
   Basic and Bearer headers, and card numbers (Luhn and a card prefix).
3. Then the regex plugins of ``detect-secrets`` (Yelp, maintained), for the
   providers it knows and we do not. Its keyword and high-entropy plugins are
   not used: on conversation text they flag commit hashes, UUIDs and code that
   reads a password from a variable (measured in ``tests/test_secrets.py``).

:func:`scan_value` walks a JSON value (metadata: keys and values, a value read
with its key, so ``{"password": "hunter22"}`` is found); :func:`redact_value`
redacts it in place. :func:`effective_policy` decides the policy of a call.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import string
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..choices import SECRET_POLICIES
from ..errors import ValidationError

POLICIES = tuple(reversed(SECRET_POLICIES))  # least to most strict


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str
    start: int
    end: int


def effective_policy(
    requested: str | None, default: str, *, trusted: bool, speech: bool = False
) -> str:
    """The policy of one write: the caller's ``requested`` one, which only the trusted
    principal (an admin key) may make less strict than the store's ``default``.

    ``speech``: the write records what was said (a logged turn). Refusing it would
    lose the rest of the turn and protect nothing (the secret is not stored either
    way), so where the caller asks for nothing a ``refuse`` default becomes
    ``redact`` (issue 31, item 6); an explicit ``secrets="refuse"`` still refuses."""
    for name, value in (("secrets", requested), ("SECRET_POLICY", default)):
        if value is not None and value not in POLICIES:
            raise ValidationError(name, "must be one of refuse, redact, allow")
    if speech and requested is None and default == "refuse":
        return "redact"
    if requested is None or requested == default or trusted:
        return requested or default
    if POLICIES.index(requested) < POLICIES.index(default):
        raise ValidationError(
            "secrets",
            f"may only be as strict as the server's policy ({default}) or stricter "
            "(refuse > redact > allow) unless the caller is an admin",
        )
    return requested


# --- normalisation -----------------------------------------------------------------------
#: Letters of other scripts that look like Latin ones (Cyrillic, Greek, Armenian, Latin
#: extensions), and dashes, low lines and slashes that look like ASCII ones.
_HOMOGLYPHS = str.maketrans(
    "АВЕКМНОРСТХаеорсхуіјѕԁɡΑΒΕΖΗΙΚΜΝΟΡΤΥΧοαρνϲһҺԛԚԝԜӏӀЅІЈҮүкѵικυϳχϹͿօսհոցզաıȷɑɩ‐‑‒–—―−⁃‗∕⁄∶",
    "ABEKMHOPCTXaeopcxyijsdgABEZHIKMNOPTYXoapvchHqQwWlISIJYykvikujxCJouhngqwijai--------_//:",
)
#: Categories of characters dropped: format characters (zero-width spaces and joiners,
#: soft hyphens, BOMs, bidi marks, tags), combining marks (``g`` + U+0301 is ``ǵ``;
#: variation selectors and the grapheme joiner are marks too) and unassigned ones.
_DROPPED = frozenset({"Cf", "Mn", "Mc", "Me", "Cn"})
#: Letters that show nothing: the Hangul fillers.
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")


def normalise(text: str) -> tuple[str, list[int]]:
    """The text as matched, and for each of its characters the index it came from."""
    out: list[str] = []
    origin: list[int] = []
    done = 0
    for match in _NON_ASCII.finditer(text):  # ASCII runs are copied as they are
        index = match.start()
        out.append(text[done:index])
        origin.extend(range(done, index))
        folded = _fold(match.group())
        out.append(folded)
        origin.extend([index] * len(folded))
        done = index + 1
    out.append(text[done:])
    origin.extend(range(done, len(text)))
    return "".join(out), origin


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@functools.lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    """One character as matched: dropped when it shows nothing or only marks the one
    before; else its compatibility decomposition (fullwidth ``ｇ``, mathematical ``𝐠``
    and ``ǵ`` read ``g``) without marks, look-alikes folded."""
    if unicodedata.category(char) in _DROPPED or char in _FILLERS:
        return ""
    decomposed = unicodedata.normalize("NFKD", char.translate(_HOMOGLYPHS))
    kept = "".join(c for c in decomposed if unicodedata.category(c) not in _DROPPED)
    return kept.translate(_HOMOGLYPHS)


# --- our patterns ----------------------------------------------------------------------
#: (kind, triggers, pattern), matched against the lower-cased text (a lower-cased key
#: is still a key, and ``re.I`` is ten times slower); a pattern runs only on text that
#: holds one of its triggers (a substring of every match: most text holds none). The
#: group ``secret`` is what redaction replaces (else the whole match).
PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (kind, tuple(triggers.split()), re.compile(rx)) for kind, triggers, rx in (
    ("private_key", "-----begin", r"-----begin (?:[a-z0-9]+ )*private key(?: block)?-----"
     r"(?:[\s\S]*?-----end (?:[a-z0-9]+ )*private key(?: block)?-----|[\s\S]*)"),
    ("putty_private_key", "putty-user-key-file-",
     r"putty-user-key-file-\d+:[\s\S]*?(?:private-mac:[ \t]*[0-9a-f]+|$)"),
    ("memchentic_key", "mck_", r"(?<![a-z0-9])mck_[a-z0-9_-]{20,}"),
    ("aws_access_key", "akia asia abia acca", r"\b(?:akia|asia|abia|acca)[0-9a-z]{16}\b"),
    ("anthropic_key", "sk-", r"\bsk-ant-[a-z0-9_-]{20,}"),
    ("openai_key", "sk-", r"\bsk-(?:proj-|svcacct-|admin-)?[a-z0-9_-]{20,}"),
    ("stripe_key", "k_live_ k_test_", r"\b[rsp]k_(?:live|test)_[0-9a-z]{16,}"),
    ("github_token", "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
     r"\b(?:gh[pousr]_[a-z0-9]{30,}|github_pat_[a-z0-9_]{40,})"),
    ("gitlab_token", "gl", r"\bgl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|oas|agent)-[a-z0-9_-]{20,}"),
    ("huggingface_token", "hf_", r"\bhf_[a-z0-9]{30,}"),
    ("npm_token", "npm_", r"\bnpm_[a-z0-9]{36}\b"),
    ("pypi_token", "pypi-", r"\bpypi-[a-z0-9_-]{50,}"),
    ("sendgrid_key", "sg.", r"\bsg\.[\w-]{16,32}\.[\w-]{16,64}"),
    ("slack_token", "xox", r"\bxox[abposre]-[a-z0-9-]{10,}"),
    ("slack_webhook", "hooks.slack.com",
     r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[a-z0-9_/]{20,}"),
    ("discord_webhook", "/api/webhooks/",
     r"https://(?:canary\.|ptb\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]{20,}"),
    ("google_api_key", "aiza", r"\baiza[0-9a-z_-]{35}\b"),
    ("google_oauth_secret", "gocspx-", r"\bgocspx-[a-z0-9_-]{20,}"),
    ("digitalocean_token", "_v1_", r"\bdo[por]_v1_[a-f0-9]{64}\b"),
    ("shopify_token", "shp", r"\bshp(?:at|ca|pa|ss)_[a-f0-9]{32}\b"),
    ("postman_key", "pmak-", r"\bpmak-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    ("azure_connection_string", "accountkey sharedaccesskey sharedsecret",
     r"\b(?:accountkey|sharedaccesskey|sharedsecret)\s*=\s*(?P<secret>[a-z0-9+/=%._~-]{16,})"),
    ("azure_client_secret", "q~ 8~",
     r"(?<![a-z0-9_~.-])[a-z0-9_~.-]{3}\d[q8]~[a-z0-9_~.-]{31,34}(?![a-z0-9_~.-])"),
    ("jwt", "eyj", r"\beyj[a-z0-9_-]{8,}\.eyj[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}"),
    ("bearer_token", "bearer", r"\bbearer\s+(?P<secret>[a-z0-9._~+/=-]{16,})"),
    ("basic_auth", "basic", r"\bbasic\s+(?P<secret>[a-z0-9+/]{6,}={0,2})(?![a-z0-9+/=])"),
    ("url_credentials", "://", r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<secret>[^\s@/]+)@"),
))  # fmt: skip
_TRIGGERS = tuple(sorted({t for _, triggers, _ in PATTERNS for t in triggers}))
#: Substrings of every name :data:`_KEYWORD` matches.
_KEYWORD_TRIGGERS = ("pass", "pw", "secret", "credential", "key", "token", "string")

#: Names that hold a secret: a word that stands alone, or (``token``, ``pass``, ``pw``)
#: that ends a longer name joined by ``_``/``.``/``-`` (``GITHUB_TOKEN``); any name may
#: go on with more parts (``AWS_SECRET_ACCESS_KEY``, ``DB_PASSWORD_PROD``).
_KEYWORD = re.compile(
    r"(?:password|passwd|passphrase|pwd|secret|credentials?|"
    r"(?:api|access|secret|account|subscription|private|master|encryption|signing|auth|"
    r"service|client|app|admin|azure|openai|storage)[ _.-]?key|"
    r"(?:access|auth|refresh|bearer|session|api|bot|personal[ _.-]access)[ _.-]?token|"
    r"client[ _.-]?secret|connection[ _.-]?string|(?P<suffix>token|pass|pw))"
    r"(?:[_.-][a-z0-9]+)*"
)
#: What may follow the name: ``="value"`` / ``": 'value'`` (quoted; a passphrase may
#: hold spaces), ``=value`` (environment files, query strings), or "is ...",
#: ``: ...``, `` = ...`` (prose or spaced code: the value must look like a secret).
_TAILS = (
    (re.compile(r"[\"'`\]]{0,2}\s*(?::=|=>|==?|:)\s*@?(?P<q>[\"'`])(?P<secret>[^\"'`\n]{4,200})(?P=q)"),
     False),
    (re.compile(r"[\"'`]?=(?P<secret>[^\s\"'`,;&]{4,256})"), False),
    (re.compile(r"(?:\s+(?:is|was|are)\s*:?\s+|\s*[:=]=?\s*)(?P<secret>[^\s\"'`,;]{6,256})"), True),
)  # fmt: skip
_NOT_VALUES = frozenset({
    "true", "false", "none", "null", "nil", "undefined", "required", "optional", "empty",
    "string", "str", "bytes", "int", "integer", "number", "text", "hidden", "redacted",
    "masked", "secret", "password", "passwd", "pass", "pwd", "token", "apikey", "api_key",
    "changeme", "default", "unknown", "missing", "invalid", "correct", "wrong", "below",
    "above", "encrypted", "hashed", "stored", "unchanged",
})  # fmt: skip
_PLACEHOLDER = re.compile(
    r"your|example|placeholder|sample|dummy|<[^>]*>|\{\{|\$\{|^\$|%\(|%s\b|\.\.\.|\*\*\*|"
    r"xxxx|redacted|here\b|^https?://|^[^\w\s\\]|\(|\[|\\"
)
_ATTRIBUTE = re.compile(r"[a-z_]\w*(?:\.[a-z_]\w*)+")  # config.password, os.environ.get
_STRONG = re.compile(r"[0-9!@#$%^&*+=~?]")
_PROSE_END = ".,!?:;)]}"


def _value_is_secret(value: str, prose: bool, name: str = "pass") -> bool:
    """Whether the (lower-cased) value of an assignment looks like a secret: not a
    placeholder, a variable, a call, a flag or (but for a password or PIN) a count;
    in prose, holding a digit or a symbol."""
    if len(value) < (6 if prose else 4) or value in _NOT_VALUES or len(set(value)) < 3:
        return False
    if value.isdigit() and not any(word in name for word in ("pass", "pw", "pin")):
        return False  # MAX_TOKENS=4096
    if _PLACEHOLDER.search(value) or _ATTRIBUTE.fullmatch(value):
        return False
    return not prose or (_STRONG.search(value) is not None and not value.isalpha())


#: Names about a secret that do not hold one.
_NOT_A_SECRET_NAME = re.compile(
    r"[_.-](?:hint|policy|length|len|min|max|reset|manager|field|label|prompt|required|"
    r"count|file|path|url|uri|id|type|name|format|expiry|expires|enabled|rules?|strength)$"
)
_SPACED_NAME = re.compile(r"(?:pass(?:word|wd|phrase)?|pwd)$")


def _assignments(low: str) -> Iterator[tuple[str, int, int]]:
    for name in _KEYWORD.finditer(low):
        start = name.start()
        before = low[start - 1] if start else " "
        if name.group("suffix") is not None:  # only at the end of a joined name
            if before not in "_.-" or start < 2 or not low[start - 2].isalnum():
                continue
        elif before.isalnum():
            continue  # "1password", "monkey"
        if _NOT_A_SECRET_NAME.search(name.group()):
            continue  # PASSWORD_HINT, password_min_length, SECRET_FILE
        for tail, prose in _TAILS:
            found = tail.match(low, name.end())
            if found is None:
                continue
            value = found.group("secret")
            value = value.rstrip(_PROSE_END) if prose else value
            if " " in value and not _SPACED_NAME.search(name.group()):
                break  # only a passphrase holds spaces ("secret": "surprise party")
            if _value_is_secret(value, prose, name.group()):
                yield ("password", found.start("secret"), found.start("secret") + len(value))
            break


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = int(char) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


_CARD = re.compile(r"\d(?:[ -]?\d){12,18}")
_CARD_PREFIX = re.compile(
    r"4\d{12}(?:\d{3}){0,2}|5[1-5]\d{14}|2(?:2[2-9]|[3-6]\d|7[01])\d{13}|2720\d{12}|"
    r"3[47]\d{13}|6(?:011|5\d\d|4[4-9]\d)\d{12,15}|3(?:0[0-5]|[689]\d)\d{11,16}|"
    r"35(?:2[89]|[3-8]\d)\d{12,15}|62\d{14,17}"
)


def _cards(text: str) -> Iterator[tuple[int, int]]:
    """Card numbers: 13-19 digits (alone or in groups of 4-6) with a card prefix
    that pass the Luhn check; not part of a longer number, a date or a version."""
    for match in _CARD.finditer(text):
        start, end = match.span()
        before, after = text[start - 1 : start], text[end : end + 1]
        if (before and before in "-./,0123456789") or (after and after in "-.0123456789"):
            continue  # part of a longer number, a date, a version
        raw = match.group()
        digits = raw.replace(" ", "").replace("-", "")
        groups = re.split(r"[ -]", raw)
        grouped = len(groups) == 1 or all(len(g) in (4, 5, 6) for g in groups)
        if grouped and _CARD_PREFIX.fullmatch(digits) and len(set(digits)) > 1 and _luhn(digits):
            yield start, end


def _basic(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password and decoded.isprintable())


def _ours(text: str, low: str) -> Iterator[tuple[str, int, int]]:
    present = {t for t in _TRIGGERS if t in low}  # each trigger looked for once
    for kind, triggers, pattern in PATTERNS:
        if present.isdisjoint(triggers):
            continue
        group = "secret" if "secret" in pattern.groupindex else 0
        check = _CHECKS.get(kind)
        for match in pattern.finditer(low):
            start, end = match.span(group)
            if check is None or check(text[start:end]):
                yield kind, start, end
    if any(t in low for t in _KEYWORD_TRIGGERS):
        yield from _assignments(low)
    for start, end in _cards(low):
        yield ("card_number", start, end)


def _placeholder(value: str) -> bool:
    low = value.lower()
    return low in _NOT_VALUES or _PLACEHOLDER_WORD.search(low) is not None


_PLACEHOLDER_WORD = re.compile(r"your|example|placeholder|<[^>]*>|\$\{|\{\{|xxxx|\*\*\*")


def _plain_value(value: str) -> bool:
    return _value_is_secret(value.lower(), prose=False)


#: Checks of a match's text (original case) for the kinds that have one.
_CHECKS = {"bearer_token": _plain_value, "url_credentials": _plain_value, "basic_auth": _basic}


# --- detect-secrets ----------------------------------------------------------------------
#: detect-secrets plugins left out: they flag hashes, ids and code (see the docstring).
_UNUSED_PLUGINS = frozenset({
    "KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector",
})  # fmt: skip
_plugins: list[Any] | None = None


def _detect_secrets_plugins() -> list[Any]:
    """One instance of each regex plugin of detect-secrets (empty when not installed)."""
    global _plugins
    if _plugins is None:
        try:
            from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        except ImportError:  # pragma: no cover - a dependency; our patterns still run
            _plugins = []
        else:
            classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
            _plugins = [c() for c in classes if c.__name__ not in _UNUSED_PLUGINS]
    return _plugins


def _kind(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")


#: A run of 10 or more key-like characters holding a digit and a letter: every secret
#: the plugins find has one; text without one (most text, dates included) skips them.
_TOKEN_RUN = re.compile(
    r"(?<![A-Za-z0-9+/_=.:-])(?=[A-Za-z0-9+/_=.:-]{10})"
    r"(?=[A-Za-z+/_=.:-]*+\d)(?=[0-9+/_=.:-]*+[A-Za-z])"
)


def _theirs(text: str, low: str) -> Iterator[tuple[str, int, int]]:
    if _TOKEN_RUN.search(text) is None:
        return
    for plugin in _detect_secrets_plugins():
        for regex in plugin.denylist:
            for match in regex.finditer(text):
                start, end = _secret_span(match)
                whole = match.group()  # the plugin's own checks too (a JWT's JSON)
                if not _placeholder(text[start:end]) and any(plugin.analyze_string(whole)):
                    yield _kind(plugin.secret_type), start, end


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """The secret in a plugin's match: its longest group when that is key-sized (the
    value of ``aws_secret = "..."``), else the whole match (a group that is only a
    prefix, like ``ghp``)."""
    groups = [i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)]
    longest = max(groups, key=lambda i: len(match.group(i)), default=0)
    return match.span(longest) if longest and len(match.group(longest)) >= 8 else match.span()


#: The detectors, in the order they run (the first to claim a span names its kind).
DETECTORS = ("memchentic", "detect-secrets")
_DETECTORS = {"memchentic": _ours, "detect-secrets": _theirs}


# --- the scan ----------------------------------------------------------------------------
def find_secrets(text: str, *, using: Sequence[str] = DETECTORS) -> list[SecretFinding]:
    """Every secret-looking span of ``text`` (indices into ``text`` itself), in order,
    without overlaps. ``using``: which of :data:`DETECTORS` run (all by default)."""
    if not text:
        return []
    matched, origin = (text, []) if text.isascii() else normalise(text)
    low = matched.translate(_ASCII_LOWER)  # same length, same indices
    found: list[tuple[str, int, int]] = []
    for name in using:
        for kind, start, end in _DETECTORS[name](matched, low):
            if not any(s < end and start < e for _, s, e in found):
                found.append((kind, start, end))
    if origin:  # back to the original text: the obfuscation is redacted with it
        found = [(k, origin[s], origin[e - 1] + 1) for k, s, e in found]
    return sorted((SecretFinding(k, s, e) for k, s, e in found), key=lambda f: f.start)


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def redact(text: str, findings: list[SecretFinding] | None = None) -> str:
    findings = find_secrets(text) if findings is None else findings
    for finding in sorted(findings, key=lambda f: f.start, reverse=True):
        text = text[: finding.start] + f"[REDACTED:{finding.kind}]" + text[finding.end :]
    return text


def _in_context(key: str, value: str) -> list[SecretFinding]:
    """Findings of ``value`` read as the value of ``key`` (``"password": "..."``)."""
    prefix = f'"{key}": "'
    found = find_secrets(prefix + value + '"')
    return [
        SecretFinding(f.kind, max(f.start - len(prefix), 0), min(f.end - len(prefix), len(value)))
        for f in found
        if f.end > len(prefix) and f.start < len(prefix) + len(value)
    ]


def _leaves(value: Any) -> Iterator[tuple[Any, Any, str, str | None]]:
    """``(container, key or index, text, name)`` of each string in a JSON value, and of
    each dict key (name None) — without recursion (metadata may be deeply nested)."""
    stack: list[tuple[Any, str | None]] = [(value, None)]
    while stack:
        node, name = stack.pop()
        items: list[tuple[Any, Any]] = (
            list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        )
        for key, item in items:
            label: str | None = name
            if isinstance(node, dict):
                label = str(key)
                yield node, key, label, None
            if isinstance(item, str):
                yield node, key, item, label
            elif isinstance(item, int) and not isinstance(item, bool):
                yield node, key, str(item), label
            elif isinstance(item, dict | list):
                stack.append((item, label))


def _leaf_findings(text: str, name: str | None) -> list[SecretFinding]:
    return _in_context(name, text) if name else find_secrets(text)


def secret_counts(value: Any) -> dict[str, int]:
    """How many secrets of each kind a string, a list or a JSON object holds, by kind."""
    if value is None:
        return {}
    found = (
        find_secrets(value)
        if isinstance(value, str)
        else [f for _, _, text, name in _leaves(value) for f in _leaf_findings(text, name)]
    )
    counts: dict[str, int] = {}
    for finding in found:
        counts[finding.kind] = counts.get(finding.kind, 0) + 1
    return dict(sorted(counts.items()))


def scan_value(value: Any) -> list[str]:
    """The kinds of secret in a string, a list of strings or a JSON object, sorted."""
    if value is None:
        return []
    if isinstance(value, str):
        return sorted({f.kind for f in find_secrets(value)})
    kinds: set[str] = set()
    for _, _, text, name in _leaves(value):
        kinds.update(f.kind for f in _leaf_findings(text, name))
    return sorted(kinds)


def redact_value(value: Any) -> Any:
    """``value`` with its secrets redacted (lists and dicts are changed in place)."""
    if value is None or isinstance(value, str):
        return redact(value) if value else value
    renamed: list[tuple[dict[str, Any], str, str]] = []
    for node, key, text, name in list(_leaves(value)):
        found = _leaf_findings(text, name)
        if not found:
            continue
        if isinstance(node, dict) and name is None and key == text:
            renamed.append((node, key, redact(key, found)))
        elif isinstance(node[key], str):
            node[key] = redact(text, found)
        else:
            node[key] = f"[REDACTED:{found[0].kind}]"
    for node, old, new in renamed:
        node[new] = node.pop(old)
    return value


# --- a write's policy ----------------------------------------------------------------------
#: The fields of a memory a write may set, all scanned (text, lists and metadata).
RECORD_FIELDS = ("content", "title", "tier_l0", "tier_l1", "slot_key", "path_hint", "repo",
                 "tags", "entities", "metadata")  # fmt: skip
SECRET_RULE = "must not contain secrets (keys, passwords, tokens)"


def apply_policy(target: Any, policy: str, fields: Iterable[str]) -> dict[str, dict[str, int]]:
    """Scan the attributes ``fields`` of ``target`` (a record, an edge, a turn): per
    field, how many secrets of each kind (none under ``allow``). Under ``redact`` the
    secrets are replaced in place; under ``refuse`` nothing changes and the caller
    refuses the write."""
    if policy == "allow":
        return {}
    found = {name: kinds for name in fields if (kinds := secret_counts(getattr(target, name)))}
    if policy == "redact":
        for name in found:
            setattr(target, name, redact_value(getattr(target, name)))
    return found


def kinds_of(found: Mapping[str, Iterable[str]]) -> list[str]:
    return sorted({kind for kinds in found.values() for kind in kinds})


def count_of(found: Mapping[str, Mapping[str, int]]) -> int:
    """How many secrets :func:`apply_policy` found, over every field."""
    return sum(n for counts in found.values() for n in counts.values())


def redaction_note(found: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """What a redacted write's metadata says about it: the kinds and how many spans
    (never the secret itself)."""
    return {"redacted": kinds_of(found), "redacted_count": count_of(found)}


def redaction_reason(found: Mapping[str, Mapping[str, int]]) -> str:
    """The reason a redacted write carries: ``redacted:KIND,KIND (N)``."""
    return f"redacted:{','.join(kinds_of(found))} ({count_of(found)})"


def police_value(value: Any, policy: str, field: str) -> Any:
    """``value`` (text or JSON) under ``policy`` where a write has no ``refused`` result
    (an edge, an imported line): a :class:`ValidationError` naming ``field`` under
    ``refuse``, redacted under ``redact``, as it is under ``allow``."""
    if policy == "allow" or not scan_value(value):
        return value
    if policy == "refuse":
        raise ValidationError(field, SECRET_RULE)
    return redact_value(value)


def police_record(record: Any, policy: str, fields: Iterable[str] = RECORD_FIELDS) -> None:
    """:func:`police_value` for the ``fields`` of a record: a :class:`ValidationError`
    naming them under ``refuse``; redacted (the kinds in ``metadata["redacted"]``)
    under ``redact``."""
    found = apply_policy(record, policy, fields)
    if found and policy == "refuse":
        raise ValidationError(",".join(found), SECRET_RULE)
    if found:
        record.metadata = {**record.metadata, **redaction_note(found)}
