from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.health_body_engines import HealthBodyEngines


T = TypeVar("T", bound="HealthBody")


@_attrs_define
class HealthBody:
    """
    Attributes:
        status (str): `ok` when storage and every registry answer, `unavailable` otherwise, `draining` (503) while the
            node
            stops: it refuses new real-time sessions and finishes the live ones.
        database (str): `sqlite` or `postgres`.
        engines (HealthBodyEngines): Each engine's models: `ready`/`loaded`, `not_loaded` (loads on first use),
            `missing`
            (run `scripts/fetch-models`) or `failed`; and the inference queue.
        live_sessions (int): Real-time sessions (phone calls and direct sockets) live on this node.
        error (None | str | Unset):
    """

    status: str
    database: str
    engines: HealthBodyEngines
    live_sessions: int
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status

        database = self.database

        engines = self.engines.to_dict()

        live_sessions = self.live_sessions

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
                "database": database,
                "engines": engines,
                "liveSessions": live_sessions,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.health_body_engines import HealthBodyEngines  # noqa: PLC0415

        d = dict(src_dict)
        status = d.pop("status")

        database = d.pop("database")

        engines = HealthBodyEngines.from_dict(d.pop("engines"))

        live_sessions = d.pop("liveSessions")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        health_body = cls(
            status=status,
            database=database,
            engines=engines,
            live_sessions=live_sessions,
            error=error,
        )

        health_body.additional_properties = d
        return health_body

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
