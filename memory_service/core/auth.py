"""API keys: bearer tokens with roles, stored hashed, each bound to a tenant.

Roles are ordered: `reader` (list, show, audit) < `agent` (also retrieve, report, add lessons,
upload runs) < `admin` (also edit, archive, and maintenance of its own tenant: values rebuild,
reindex, counts) < `operator` (maintenance and counts across every tenant). Every role but
`operator` sees only its key's tenant. While a store has no keys it serves only clients on
the loopback interface (the embedded default, acting as operator); once a key exists, every
/v1 request needs one.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from sqlmodel import Field, Session, SQLModel, col, func, select

from memory_service.core.errors import NotFound, ServiceError
from memory_service.core.schema import utcnow

ROLES = ("reader", "agent", "admin", "operator")
LOOPBACK = {"127.0.0.1", "::1", "localhost", "testclient"}


class ApiKey(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=16)
    tenant: str = Field(default="default", max_length=64)
    role: str = Field(max_length=16)
    name: str = Field(default="", max_length=128)
    key_hash: str = Field(index=True, unique=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow)
    revoked: bool = False


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"


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


def keys_exist(session: Session) -> bool:
    live = select(func.count()).select_from(ApiKey).where(col(ApiKey.revoked).is_(False))
    return bool(session.exec(live).one())


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
    if keys_exist(session):
        raise Unauthorized("this server requires an API key (Authorization: Bearer <key>)")
    if client_host not in LOOPBACK:
        raise Unauthorized(
            "without API keys the service answers only local clients; "
            "create one with `tunemem keys create`"
        )
    return default_tenant, "operator"


def require(role: str, granted: str) -> None:
    if ROLES.index(granted) < ROLES.index(role):
        raise Forbidden(f"this operation needs the {role} role; the key has {granted}")
