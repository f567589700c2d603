"""A provider runtime's account, quotas and installed release."""

from __future__ import annotations

from pydantic import Field

from ._base import GoModel, GoStruct, GoTime, OmitEmpty, OmitNil


class Account(GoModel):
    """A provider runtime's sign-in, shared by all its conversations; never a credential."""

    signed_in: bool = False
    login: OmitEmpty[str] = ""
    host: OmitEmpty[str] = ""
    source: OmitEmpty[str] = ""
    """One of the ACCOUNT_* constants; "" while signed out."""
    env_var: OmitEmpty[str] = ""
    """The environment variable whose token takes precedence; its value is never reported."""
    message: OmitEmpty[str] = ""
    """The runtime's sanitized status or error text."""
    stored: OmitNil[bool | None] = None
    """False after a sign-in the runtime could not keep: it lasts until the runtime stops."""


class DeviceCode(GoModel):
    """What a person enters at ``url`` to approve a device sign-in.

    ``notice``, when set, says why another approval is needed.
    """

    url: str = Field("", alias="verification_uri")
    code: str = Field("", alias="user_code")
    notice: OmitEmpty[str] = ""


class Quota(GoStruct):
    """One account quota as the provider reported it."""

    type: str
    """The provider's quota key, e.g. Copilot's premium_interactions."""
    used: int = 0
    entitlement: int = 0
    """What the period includes, 0 when unlimited."""
    unlimited: bool = False
    remaining_percent: float = 0.0
    overage: float = 0.0
    """What was used beyond the entitlement this period."""
    reset_at: GoTime = None
    """When the provider says it resets; None when it does not say."""
    unit: str = ""
    """QUOTA_UNIT_CREDITS or QUOTA_UNIT_REQUESTS; "" when not said."""
    plan: str = ""
    """The account's plan tier as the provider names it, e.g. "pro"."""


class CLIRelease(GoStruct):
    """A provider runtime's installed and newest release.

    The adapter compares versions (its scheme is its own); ``manual`` says why the runtime
    cannot be updated from here, empty when it can.
    """

    installed: str = ""
    latest: str = ""
    newer: bool = False
    manual: str = ""
