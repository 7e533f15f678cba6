"""API keys: bearer tokens with roles, stored hashed, each bound to a tenant.

Roles are ordered: `reader` (list, show, audit) < `agent` (also retrieve, report, add lessons,
upload runs) < `admin` (also edit, archive, and maintenance of its own tenant: values rebuild,
reindex, counts) < `operator` (maintenance and counts across every tenant). Every role but
`operator` sees only its key's tenant. While a store has never had a key it serves only
clients on the loopback interface (the embedded default, acting as operator). Keys fail
closed: the first key marks the store keyed (a `StoreFlag`), and from then on every /v1 request
needs a live key, even after the last one is revoked; only `open_store` (`tunemem keys open`,
refused while a live key exists) makes the store keyless again.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlmodel import Session, col, func, select

from tunemem.memory_service.core.errors import NotFound, ServiceError
from tunemem.memory_service.core.sql.access_tables import ApiKey, StoreFlag
from tunemem.memory_service.core.sql.tables import utcnow

ROLES = ("reader", "agent", "admin", "operator")
LOOPBACK = {"127.0.0.1", "::1", "localhost", "testclient"}


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"


KEYED = "keyed"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_key(session: Session, role: str, tenant: str, name: str = "") -> tuple[ApiKey, str]:
    """A new key; the secret is returned once and only its hash is stored."""
    if role not in ROLES:
        raise ServiceError(
            f"unknown role {role!r}; valid roles: {', '.join(ROLES)}", code="unknown_role"
        )
    key_id = secrets.token_hex(4)
    secret = f"tm_{key_id}_{secrets.token_urlsafe(24)}"
    row = ApiKey(id=key_id, tenant=tenant, role=role, name=name, key_hash=hash_key(secret))
    session.add(row)
    flag = session.get(StoreFlag, KEYED) or StoreFlag(name=KEYED, value="true")
    flag.value, flag.updated_at = "true", utcnow()
    session.add(flag)
    session.commit()
    session.refresh(row)
    return row, secret


def revoke_key(session: Session, key_id: str) -> ApiKey:
    row = session.get(ApiKey, key_id)
    if row is None:
        raise NotFound(f"no API key with id {key_id}", code="key_not_found")
    row.revoked = True
    session.add(row)
    session.commit()
    session.refresh(row)
    return row


def list_keys(session: Session) -> list[ApiKey]:
    return list(session.exec(select(ApiKey).order_by(col(ApiKey.created_at))))


def live_keys(session: Session) -> list[ApiKey]:
    return list(session.exec(select(ApiKey).where(col(ApiKey.revoked).is_(False))))


def is_keyed(session: Session) -> bool:
    """Whether keyless requests are refused: the store has (or once had) a key."""
    # One statement (every keyless request asks): the flag, and whether any key is live.
    flag = select(StoreFlag.value).where(StoreFlag.name == KEYED).scalar_subquery()
    live = (
        select(func.count())
        .select_from(ApiKey)
        .where(col(ApiKey.revoked).is_(False))
        .scalar_subquery()
    )
    value, count = session.execute(select(flag, live)).one()
    return value == "true" or bool(count)


def open_store(session: Session) -> None:
    """Make a keyed store keyless again (loopback clients only, as operator): the one way
    back, and refused while any key is live (revoke those first)."""
    live = live_keys(session)
    if live:
        raise ServiceError(
            f"{len(live)} live key(s) ({', '.join(k.id for k in live[:10])}); revoke them before "
            "opening the store to keyless local clients",
            code="live_keys",
            status=409,
        )
    flag = session.get(StoreFlag, KEYED) or StoreFlag(name=KEYED, value="false")
    flag.value, flag.updated_at = "false", utcnow()
    session.add(flag)
    session.commit()


def authenticate(
    session: Session, authorization: str | None, client_host: str | None, default_tenant: str
) -> tuple[str, str]:
    """(tenant, role) of a request, or Unauthorized.

    Args:
        session: a session on the store holding the keys.
        authorization: the Authorization header, "Bearer <key>".
        client_host: the peer address, for the no-keys loopback rule.
        default_tenant: the tenant of keyless loopback requests.
    """
    if authorization:
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() != "bearer" or not secret:
            raise Unauthorized("Authorization must be 'Bearer <key>'")
        digest = hash_key(secret.strip())
        row = session.exec(select(ApiKey).where(ApiKey.key_hash == digest)).first()
        if row is None or row.revoked:
            raise Unauthorized("unknown or revoked API key")
        return row.tenant, row.role
    if is_keyed(session):
        raise Unauthorized(
            "this server requires an API key (Authorization: Bearer <key>); a store that has "
            "had keys stays keyed after they are revoked, until `tunemem keys open`"
        )
    if client_host not in LOOPBACK:
        raise Unauthorized(
            "without API keys the service answers only local clients; "
            "create one with `tunemem keys create`"
        )
    return default_tenant, "operator"


def require(role: str, granted: str) -> None:
    if ROLES.index(granted) < ROLES.index(role):
        raise Forbidden(f"this operation needs the {role} role; the key has {granted}")
