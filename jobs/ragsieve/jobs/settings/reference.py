"""The settings reference: every setting, its env var, default and description, as Markdown."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ragsieve.jobs.settings.settings import ENV_PREFIX, Settings


def reference_table() -> str:
    """Markdown table of every setting, its env var, default and description (for the README)."""
    rows = ["| setting | env var | default | description |", "|---|---|---|---|"]

    def walk(model: type[BaseModel], values: Any, prefix: tuple[str, ...]) -> None:
        # values: the section's effective default instance (a section's default_factory may
        # differ from its class defaults, as the sampling strata's rates and quotas do)
        for name, field in model.model_fields.items():
            ann = field.annotation
            default = (
                getattr(values, name)
                if values is not None
                else field.get_default(call_default_factory=True)
            )
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                walk(ann, default, (*prefix, name))
                continue
            path = (*prefix, name)
            shown = "" if default is None else f"`{default}`"
            rows.append(
                f"| `{'.'.join(path)}` | `{ENV_PREFIX}{'__'.join(p.upper() for p in path)}` "
                f"| {shown} | {field.description or ''} |"
            )

    walk(Settings, None, ())
    return "\n".join(rows)


__all__ = ["reference_table"]
