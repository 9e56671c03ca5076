"""URLs that may carry credentials: masked wherever one is echoed, stripped wherever one is
recorded. A credential can sit in the userinfo (``user:password@``, a token as the user
name as in ``https://TOKEN@github.com``, a raw ``@`` inside a password) or in a query
parameter (libpq's ``?password=``, ``?sslpassword=``, ``?access_token=``)."""

from __future__ import annotations

import re

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
_SECRET_PARAM = re.compile(r"pass|pwd|secret|token|key|auth|cred|sig", re.IGNORECASE)
# user names that are tokens: GitHub's and GitLab's token prefixes, or anything token-long
_TOKEN_USER = re.compile(r"^(gh[a-z]_|github_pat_|glpat-|glcbt-)|^\S{20,}$", re.IGNORECASE)
MASK = "***"


def _split(url: str) -> tuple[str, str | None, str, str]:
    """scheme://, userinfo (None when absent), host and path, ?query and #fragment. The
    userinfo ends at the *last* ``@``: a password may hold a raw one; reading too much as
    userinfo only masks more."""
    scheme, _, rest = url.partition("://")
    userinfo, at, rest_ = rest.rpartition("@")
    if not at:
        userinfo, rest_ = None, rest
    where = min((i for i in (rest_.find("?"), rest_.find("#")) if i >= 0), default=len(rest_))
    return f"{scheme}://", userinfo, rest_[:where], rest_[where:]


def _masked_query(tail: str) -> str:
    def one(m: re.Match) -> str:
        key, value = m.group(1), m.group(2)
        return f"{key}={MASK}" if value and _SECRET_PARAM.search(key) else m.group()

    return re.sub(r"([^?&#=]+)=([^&#]*)", one, tail)


def mask_url(url: str) -> str:
    """``url`` fit to print: the password and every password-like query value as ``***``;
    the user name kept unless it looks like a token."""
    scheme, userinfo, hostpath, tail = _split(url)
    auth = ""
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        user = MASK if _TOKEN_USER.search(user) else user
        auth = f"{user}:{MASK}@" if colon else f"{user}@"
    return f"{scheme}{auth}{hostpath}{_masked_query(tail)}"


def hide_secrets(text) -> str:
    """``text`` with every URL in it masked (``mask_url``): for lines that echo what the
    user typed or what a driver said about it."""
    return _URL.sub(lambda m: mask_url(m.group()), str(text))


def without_credentials(url: str) -> str:
    """``url`` fit to record (a repository in a run's provenance): no userinfo at all, no
    password-like query value. Not a URL (``git@host:org/repo.git``, a path): unchanged."""
    if "://" not in url:
        return url
    scheme, _, hostpath, tail = _split(url)
    return f"{scheme}{hostpath}{_masked_query(tail)}"


def secrets_of(url: str) -> list[str]:
    """The credential values inside ``url``, to scrub from a driver's message that might
    quote them in another form than the URL."""
    _, userinfo, _, tail = _split(url)
    found = []
    if userinfo:
        user, colon, password = userinfo.partition(":")
        found += [password] if colon and password else []
        found += [user] if _TOKEN_USER.search(user) else []
    for key, value in re.findall(r"([^?&#=]+)=([^&#]*)", tail):
        if value and _SECRET_PARAM.search(key):
            found.append(value)
    return found
