"""Selectable models: what they accept, their context tiers, prices and custom models."""

from __future__ import annotations

from pydantic import Field

from ._base import GoModel, GoStruct, Internal, OmitEmpty, OmitNil


class Media(GoModel):
    """Gates image and PDF uploads for one model; text is always accepted."""

    images: bool = False
    pdf: bool = False
    max_images: OmitEmpty[int] = 0
    """The most images one prompt may carry; 0 means no limit was reported."""
    types: OmitEmpty[list[str]] = Field(default_factory=list)
    """Accepted MIME types; empty means any type images and pdf allow."""


class ContextSize(GoModel):
    """A selectable provider context tier and its prompt token budget."""

    id: str
    tokens: int = 0


class TierPrices(GoModel):
    """One context tier's prices per batch and its prompt budget (None: not reported)."""

    input: OmitNil[float | None] = None
    output: OmitNil[float | None] = None
    cache_read: OmitNil[float | None] = None
    cache_write: OmitNil[float | None] = None
    max_prompt_tokens: OmitEmpty[int] = 0


class Prices(TierPrices):
    """A model's token prices in AI Credits per ``batch_size`` tokens.

    Embeds TierPrices (its fields are this object's own in JSON). A None price or a zero
    size was not reported.
    """

    batch_size: OmitEmpty[int] = 0
    long_context: OmitNil[TierPrices | None] = None
    """The long-context tier's prices, past the default max_prompt_tokens or when selected."""


class Model(GoModel):
    """One selectable model."""

    id: str
    name: str = ""
    efforts: list[str] = Field(default_factory=list)
    context_sizes: list[ContextSize] = Field(default_factory=list)
    media: OmitNil[Media | None] = None
    """What it accepts besides text; None means nothing reported and uploads are not gated."""
    cost_tier: OmitEmpty[str] = ""
    """One of the COST_* constants; empty when none reported."""
    discount_percent: OmitEmpty[int] = 0
    """Whole-number discount (1-100) the provider applies to usage billed through it."""
    prices: OmitNil[Prices | None] = None


class CustomModel(GoStruct):
    """An OpenAI-compatible model the owner brought; its model ID is ``selection_id``.

    ``api_key`` holds a saved key (never serialised), or ``api_key_env`` names the service
    environment variable the provider reads when it needs the key.
    """

    name: str
    """The provider connection; models with one name share base_url, wire_api, api_key_env."""
    display_name: str = ""
    base_url: str = ""
    model_id: str
    vision: bool = False
    wire_api: str = ""
    """"completions" (also for "") or "responses"."""
    api_key_env: str = ""
    api_key: Internal[str] = ""

    @property
    def selection_id(self) -> str:
        """The model's ID among the provider's models: ``"<name>/<model_id>"``."""
        return f"{self.name}/{self.model_id}"
