"""A labelled corpus for the secret detector (``tests/test_secrets.py``): ordinary
secret shapes, obfuscated ones, and tricky text that holds no secret.

The random parts are drawn from a seeded generator, so no real key is written
here and the corpus is the same on every run. Each secret entry is
``(label, text)``; each non-secret entry is a text.
"""

from __future__ import annotations

import random
import string
import unicodedata

_rng = random.Random(20)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def r(n: int, alphabet: str = ALNUM) -> str:
    """``n`` random characters (always one digit, one lower and one upper case letter
    where the alphabet has them, like real keys)."""
    while True:
        out = "".join(_rng.choice(alphabet) for _ in range(n))
        kinds = [set(out) & set(k) for k in (string.digits, string.ascii_lowercase,
                                            string.ascii_uppercase) if set(k) & set(alphabet)]
        if all(kinds) or n < 8:
            return out


def _zw(text: str, at: int) -> str:
    return text[:at] + "\u200b" + text[at:]


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


GHP = "ghp_" + r(36)
AKIA = "AKIA" + r(16, string.ascii_uppercase + string.digits)
MCK = "mck_" + r(43, ALNUM + "-_")
STRIPE = "sk_live_" + r(24)
PEM_BODY = "\n".join(r(64, B64) for _ in range(3))

SECRETS: list[tuple[str, str]] = [
    # memchentic's own keys
    ("mck key", f"use the key {MCK} for the staging server"),
    ("mck key in env", f"export MEMCHENTIC_API_KEY={MCK}"),
    ("mck key as header", f"Authorization: Bearer {MCK}"),
    # cloud and code hosts
    ("aws access key id", f"aws_access_key_id = {AKIA}"),
    ("aws secret env", f"AWS_SECRET_ACCESS_KEY={r(40, B64)}"),
    ("aws secret quoted", f'aws_secret_access_key = "{r(40, B64)}"'),
    ("github classic", f"my token is {GHP}"),
    ("github fine-grained", f"github_pat_{r(22)}_{r(59)}"),
    ("github token env", f"GITHUB_TOKEN={GHP}"),
    ("gitlab pat", f"glpat-{r(20, ALNUM + '-_')}"),
    ("gitlab deploy", f"deploy with gldt-{r(24)}"),
    ("hugging face", f"HF token: hf_{r(34)}"),
    ("hugging face env", f"HF_TOKEN=hf_{r(34)}"),
    ("npm bare", f"npm_{r(36)}"),
    ("npmrc", f"//registry.npmjs.org/:_authToken=npm_{r(36)}"),
    ("pypi", f"password = pypi-AgEIcHlwaS5vcmc{r(70, ALNUM + '-_')}"),
    ("slack webhook", "https://hooks.slack.com/services/"
                      f"T{r(8, HEX.upper())}/B{r(10, HEX.upper())}/{r(24)}"),
    ("slack bot token", f"xoxb-{r(10, string.digits)}-{r(13, string.digits)}-{r(24)}"),
    ("discord webhook", "https://discord.com/api/webhooks/"
                        f"{r(18, string.digits)}/{r(68, ALNUM + '-_')}"),
    ("sendgrid", f"SG.{r(22, ALNUM + '-_')}.{r(43, ALNUM + '-_')}"),
    ("azure storage", f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={r(86, B64)}==;"
                      "EndpointSuffix=core.windows.net"),
    ("azure service bus", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;"
                          f"SharedAccessKey={r(43, B64)}="),
    ("azure client secret", f"{r(3)}{r(1, string.digits)}Q~{r(34, ALNUM + '_~.-')}"),
    ("azure subscription key", f"Ocp-Apim-Subscription-Key: {r(32, HEX)}"),
    ("azure openai key env", f"AZURE_OPENAI_KEY={r(32, HEX)}"),
    ("google api key", f"AIza{r(35, ALNUM + '-_')}"),
    ("google oauth secret", f"GOCSPX-{r(28, ALNUM + '-_')}"),
    ("stripe live", f"export STRIPE_SECRET_KEY=\"{STRIPE}\""),
    ("stripe test restricted", f"rk_test_{r(24)}"),
    ("openai project", f"OPENAI_API_KEY=sk-proj-{r(48, ALNUM + '-_')}"),
    ("anthropic", f"sk-ant-api03-{r(80, ALNUM + '-_')}"),
    ("twilio", f"twilio SK{r(32, string.ascii_lowercase + string.digits)}"),
    ("mailchimp", f"{r(32, HEX)}-us6"),
    ("telegram bot", f"{r(9, string.digits)}:AAH{r(32, ALNUM + '-_')}"),
    ("digitalocean", f"dop_v1_{r(64, HEX)}"),
    ("shopify", f"shpat_{r(32, HEX)}"),
    ("square", f"sq0csp-{r(43, ALNUM + '-_')}"),
    ("postman", f"PMAK-{r(24, HEX)}-{r(34, HEX)}"),
    ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
            f"{r(43, ALNUM + '-_')}"),
    # keys and certificates
    ("rsa private key", f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n"
                        "-----END RSA PRIVATE KEY-----"),
    ("openssh private key", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n"
                            "-----END OPENSSH PRIVATE KEY-----"),
    ("ec private key cut", f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}"),
    ("putty v2", f"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: me\nPublic-Lines: 1\n"
                 f"{r(60, B64)}\nPrivate-Lines: 1\n{r(60, B64)}\nPrivate-MAC: {r(40, HEX)}"),
    ("putty v3", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n"
                 f"{r(44, B64)}"),
    # passwords and assignments
    ("password env", "DB_PASSWORD=hunterhunter"),
    ("password env digits", "DB_PASSWORD=s3cr3tPassw0rd"),
    ("password query", "password=correcthorse"),
    ("password json", '{"user": "sam", "password": "Tr0ub4dor&3"}'),
    ("password python dict", "{'password': 'bluebird77'}"),
    ("passphrase with spaces", 'passphrase: "correct horse battery staple"'),
    ("password prose", "my password is hunter2!"),
    ("wifi password prose", "The wifi password is Blue-Falcon-42."),
    ("password colon", "Password: P@ssw0rd!"),
    ("pwd env", "pwd=Summer2024!"),
    ("django secret key", "SECRET_KEY = 'django-insecure-8f#k2!xq9z$w7@m1'"),
    ("client secret", 'client_secret = "Zx9-Kq2_Lm7Vb4"'),
    ("api key quoted", f"api_key: '{r(20)}'"),
    ("pin env", "ATM_PASS=4921"),
    ("basic auth", "Authorization: Basic dXNlcjpwYXNzd29yZA=="),
    ("bearer token", f"curl -H 'Authorization: Bearer {r(32, ALNUM + '._-')}' https://api.acme.io"),
    ("postgres url", "postgres://admin:Sup3rS3cret@db.internal:5432/app"),
    ("mongodb url", "mongodb+srv://app:pa55word@cluster0.mongodb.net/test"),
    # card numbers
    ("visa spaced", "my card is 4111 1111 1111 1111, exp 12/27"),
    ("mastercard", "5555555555554444"),
    ("amex", "Amex 3782 822463 10005"),
    ("visa dashed", "4012-8888-8888-1881"),
    ("discover", "card: 6011111111111117"),
    # obfuscated
    ("zero-width github", "token " + _zw(GHP, 3)),
    ("zero-width aws", _zw(_zw(AKIA, 4), 9)),
    ("soft hyphen slack", f"xox\u00adb-{r(10, string.digits)}-{r(24)}"),
    ("fullwidth aws", _fullwidth(AKIA)),
    ("fullwidth github", _fullwidth(GHP)),
    ("homoglyph stripe", STRIPE.replace("e", "\u0435", 1)),  # Cyrillic е
    ("homoglyph password", "\u0440assword=hunter22"),  # Cyrillic р
    ("lower-cased aws", AKIA.lower()),
    ("upper-cased github", GHP.upper()),
    ("lower-cased private key", f"-----begin rsa private key-----\n{PEM_BODY.lower()}"),
    ("lower-cased mck", MCK.lower()),
]  # fmt: skip

#: Texts that hold none (what a careless rule takes for one).
NON_SECRETS: list[str] = [
    "my password manager is 1Password",
    "I reset my password yesterday and it works now.",
    "The password must be at least 12 characters long.",
    "Forgot password? Click the link in the email.",
    "Password: see the team vault.",
    "password: ********",
    "password: [REDACTED]",
    "Use passkeys instead of passwords.",
    "password reset emails go to spam",
    "The secret to good bread is patience.",
    "The secret is out: we're engaged!",
    "Secret Santa budget: $50",
    "Keep the api key in an environment variable, never in code.",
    "Set OPENAI_API_KEY in your shell before you run it.",
    "OPENAI_API_KEY=your-key-here",
    "AWS_SECRET_ACCESS_KEY=<your secret>",
    "DB_PASSWORD=${DB_PASSWORD}",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "password = getpass.getpass()",
    'password = request.form["password"]',
    'password = "your_password_here"',
    "api_key: null",
    '{"password_min_length": 12, "theme": "dark"}',
    "max_tokens=4096",
    "MAX_TOKEN=4096",
    "token_count = 4096",
    "sort_key=name",
    "primary_key=True",
    "Authorization: Bearer <token>",
    "Authorization: Bearer YOUR_ACCESS_TOKEN",
    "postgres://user:password@localhost:5432/db",
    "https://example.com/docs?page=2&lang=en",
    "https://github.com/owner/repo/pull/1234",
    "https://user@example.com/path",
    "commit 3f2a9c1e4b7d8a6f5e0c9b8a7d6e5f4a3b2c1d0e fixed the bug",
    "UUID 123e4567-e89b-12d3-a456-426614174000",
    "SESSION_ID=123e4567-e89b-12d3-a456-426614174000",
    "ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "version 2.14.3-rc.1, python 3.11.7, v1.2.3",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b4b0b822cd15d6c15b0f00a08",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdz9bQ3v8h2Jc6y1w0u9x4kq7p2r5t8s3m6n1b4v7c0 me@host",
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "my phone number is 555-867-5309",
    "Call me at +1 (415) 555-2671",
    "ISBN 978-3-16-148410-0",
    "order number 1234567890123",
    "tracking 9400111899223344556677",
    "card ending in 4242",
    "4111 1111 1111 1112",
    "The meeting is at 10:30 on 2023-05-30.",
    "Sam's birthday is 12/04/1990",
    "MAC address 00:1A:2B:3C:4D:5E, IP 192.168.1.10",
    "my key takeaway is that consistency matters",
    "The key is under the mat",
    "I bought 20 tokens for the arcade",
    "a 3 day ski pass: 120 euros",
    "her passport expires in 2027; bypass the queue",
    "Basic income is a policy idea",
    "Basic Instinct is a 1992 film",
    "sk-8 park on Main Street, scikit-learn 1.4",
    "The eyJ prefix: eyJhbGciOiJIUzI1NiJ9 is only a header",
    "base64 of hello world is aGVsbG8gd29ybGQ=",
    "hex colour #ff5733 and rgb(255, 87, 51)",
    "ghp is short for the group's home page",
    "The recipe calls for 2 1/2 cups of flour and 350g sugar",
    "Population of 1,234,567,890 people",
    "Error 0x80070057 when I copy the file",
    "Flight BA2490 leaves at 07:45 from gate B12",
    "Hi Caroline! I'm thinking of a token of thanks for my mentor.",
    "Remember, the secret ingredient is love.",
    '{"password_hint": "first pet", "secret": "surprise party"}',
    "PASSWORD_FILE=/run/secrets/db_password",
    "password_reset_url=https://acme.io/reset",
    "The secret: always preheat the oven.",
]


# --- evasions: the same secrets, obfuscated with Unicode -----------------------------------
#: Characters that show nothing: zero-width space, non-joiner and joiner, word joiner,
#: BOM, soft hyphen, combining grapheme joiner, a variation selector, the Mongolian
#: vowel separator, a tag character and the Hangul filler.
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f", "\ufe0f",
             "\u180e", "\U000e0041", "\u3164")  # fmt: skip
#: Combining marks (acute, diaeresis, cedilla, macron below, enclosing circle).
MARKS = ("\u0301", "\u0308", "\u0327", "\u0331", "\u20dd")
#: Letters of other scripts that look like Latin ones (Cyrillic, Greek, Armenian).
LOOKALIKES = {
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "h": "\u04bb", "i": "\u0456", "j": "\u0458",
    "k": "\u03ba", "l": "\u04cf", "o": "\u03bf", "p": "\u0440", "q": "\u051b", "s": "\u0455",
    "u": "\u057d", "v": "\u03bd", "w": "\u051d", "x": "\u0445", "y": "\u0443", "A": "\u0391",
    "B": "\u0392", "C": "\u0421", "E": "\u0415", "H": "\u041d", "I": "\u0406", "J": "\u0408",
    "K": "\u039a", "M": "\u041c", "N": "\u039d", "O": "\u041e", "P": "\u0420", "S": "\u0405",
    "T": "\u0422", "X": "\u0425", "Y": "\u03a5", "Z": "\u0396", "-": "\u2010", "_": "\uff3f",
}  # fmt: skip


def _accented(char: str) -> str:
    """``char`` as one precomposed accented letter (``g`` -> ``ǵ``), or itself."""
    for mark in MARKS[:3]:
        composed = unicodedata.normalize("NFC", char + mark)
        if len(composed) == 1:
            return composed
    return char


def _math_bold(char: str) -> str:
    if char.isascii() and char.isupper():
        return chr(0x1D400 + ord(char) - ord("A"))
    if char.isascii() and char.islower():
        return chr(0x1D41A + ord(char) - ord("a"))
    if char.isascii() and char.isdigit():
        return chr(0x1D7CE + ord(char) - ord("0"))
    return char


def evasions(text: str, start: int, end: int) -> list[tuple[str, str]]:
    """``(how, text)``: ``text`` with its secret ``text[start:end]`` obfuscated in each way
    an attacker might (the first characters, where a detector's prefix is, or all of them)."""
    span = text[start:end]
    head = min(4, len(span))

    def put(new: str) -> str:
        return text[:start] + new + text[end:]

    out = [(f"mark {ord(m):04X} after the first", put(span[0] + m + span[1:])) for m in MARKS]
    out.append(("a mark after each", put("".join(c + MARKS[i % 4] for i, c in enumerate(span)))))
    out.append(("a mark after every character of the text",
                "".join(c + MARKS[0] for c in text)))  # fmt: skip
    out.append(("precomposed accents", put("".join(map(_accented, span[:head])) + span[head:])))
    out += [(f"invisible {ord(z):04X} in the prefix", put(span[:2] + z + span[2:]))
            for z in INVISIBLE]  # fmt: skip
    out.append(("invisible after each", put("".join(c + INVISIBLE[i % len(INVISIBLE)]
                                                    for i, c in enumerate(span)))))  # fmt: skip
    out.append(("fullwidth", put(_fullwidth(span))))
    out.append(("mathematical bold", put("".join(map(_math_bold, span)))))
    out.append(("lookalikes in the prefix",
                put("".join(LOOKALIKES.get(c, c) for c in span[:head]) + span[head:])))  # fmt: skip
    return [(how, evaded) for how, evaded in out if evaded != text]
