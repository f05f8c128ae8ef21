from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.contact_request_variables_type_0 import ContactRequestVariablesType0


T = TypeVar("T", bound="ContactRequest")


@_attrs_define
class ContactRequest:
    """
    Attributes:
        to (None | str | Unset): E.164; premium-rate and other costly destinations are refused (`telephony.outbound`).
        variables (ContactRequestVariablesType0 | None | Unset): The agent's variables on this call (`{{name}}` in its
            prompt and greeting), over the
            instance's: strings, numbers or booleans, at most 4 KiB serialized.
    """

    to: None | str | Unset = UNSET
    variables: ContactRequestVariablesType0 | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.contact_request_variables_type_0 import ContactRequestVariablesType0  # noqa: PLC0415

        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        else:
            to = self.to

        variables: dict[str, Any] | None | Unset
        if isinstance(self.variables, Unset):
            variables = UNSET
        elif isinstance(self.variables, ContactRequestVariablesType0):
            variables = self.variables.to_dict()
        else:
            variables = self.variables

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if to is not UNSET:
            field_dict["to"] = to
        if variables is not UNSET:
            field_dict["variables"] = variables

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.contact_request_variables_type_0 import ContactRequestVariablesType0  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_variables(data: object) -> ContactRequestVariablesType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                variables_type_0 = ContactRequestVariablesType0.from_dict(data)

                return variables_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ContactRequestVariablesType0 | None | Unset, data)

        variables = _parse_variables(d.pop("variables", UNSET))

        contact_request = cls(
            to=to,
            variables=variables,
        )

        return contact_request
