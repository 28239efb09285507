"""Secrets at write time (DESIGN section 4, step 5): refused or redacted, never stored."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: (kind, pattern); the group named ``secret`` is what redaction replaces (else all).
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private_key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)"
    )),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}")),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer_token", re.compile(r"\bBearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})", re.I)),
    ("url_credentials", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<secret>[^\s@/]+)@")),
    ("password", re.compile(
        r"\b(?:password|passwd|passphrase|pwd|secret|api[_ -]?key|access[_ -]?token|"
        r"auth[_ -]?token|client[_ -]?secret)\b\s*(?:[:=]|\bis\b)\s*[\"']?"
        r"(?P<secret>(?=[^\s\"']*[0-9!@#$%^&*_+=~-])[^\s\"']{6,})",
        re.I,
    )),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str
    start: int
    end: int


#: Lower-case text that every pattern's match contains one of: text holding none
#: of them holds no secret, and skips the patterns (most text, on bulk writes).
_TRIGGERS: tuple[str, ...] = (
    "-----begin", "akia", "asia", "sk-", "k_live_", "k_test_", "ghp_", "gho_", "ghu_",
    "ghs_", "ghr_", "github_pat_", "xox", "aiza", "eyj", "bearer", "://", "passw",
    "passphrase", "pwd", "secret", "api", "access", "auth",
)  # fmt: skip


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret-looking span, in order, without overlaps."""
    if not text:
        return []
    lowered = text.lower()
    for trigger in _TRIGGERS:  # (a loop, not any() over a generator: a fifth faster)
        if trigger in lowered:
            break
    else:
        return []
    found: list[SecretFinding] = []
    for kind, pattern in PATTERNS:
        for match in pattern.finditer(text):
            group = "secret" if "secret" in pattern.groupindex else 0
            start, end = match.span(group)
            if not any(f.start < end and start < f.end for f in found):
                found.append(SecretFinding(kind, start, end))
    return sorted(found, key=lambda f: f.start)


def redact(text: str, findings: list[SecretFinding] | None = None) -> str:
    findings = find_secrets(text) if findings is None else findings
    for finding in sorted(findings, key=lambda f: f.start, reverse=True):
        text = text[: finding.start] + f"[REDACTED:{finding.kind}]" + text[finding.end :]
    return text
