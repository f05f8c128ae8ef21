from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.instance_fields_variables_type_0 import InstanceFieldsVariablesType0


T = TypeVar("T", bound="InstanceFields")


@_attrs_define
class InstanceFields:
    """Instance fields; on update, absent fields stay and `null` clears.

    Attributes:
        id (None | str | Unset): Custom id on create: 1-60 letters, digits, `_` or `-`. Generated when omitted.
        name (None | str | Unset): Up to 100 characters.
        phone_number (None | str | Unset): E.164: `+` and 2-15 digits.
        context (None | str | Unset): Up to 10,000 characters.
        variables (InstanceFieldsVariablesType0 | None | Unset): An object of at most 64 KiB.
    """

    id: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    phone_number: None | str | Unset = UNSET
    context: None | str | Unset = UNSET
    variables: InstanceFieldsVariablesType0 | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.instance_fields_variables_type_0 import InstanceFieldsVariablesType0  # noqa: PLC0415

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        phone_number: None | str | Unset
        if isinstance(self.phone_number, Unset):
            phone_number = UNSET
        else:
            phone_number = self.phone_number

        context: None | str | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        else:
            context = self.context

        variables: dict[str, Any] | None | Unset
        if isinstance(self.variables, Unset):
            variables = UNSET
        elif isinstance(self.variables, InstanceFieldsVariablesType0):
            variables = self.variables.to_dict()
        else:
            variables = self.variables

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if id is not UNSET:
            field_dict["id"] = id
        if name is not UNSET:
            field_dict["name"] = name
        if phone_number is not UNSET:
            field_dict["phoneNumber"] = phone_number
        if context is not UNSET:
            field_dict["context"] = context
        if variables is not UNSET:
            field_dict["variables"] = variables

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.instance_fields_variables_type_0 import InstanceFieldsVariablesType0  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_phone_number(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        phone_number = _parse_phone_number(d.pop("phoneNumber", UNSET))

        def _parse_context(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        def _parse_variables(data: object) -> InstanceFieldsVariablesType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                variables_type_0 = InstanceFieldsVariablesType0.from_dict(data)

                return variables_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(InstanceFieldsVariablesType0 | None | Unset, data)

        variables = _parse_variables(d.pop("variables", UNSET))

        instance_fields = cls(
            id=id,
            name=name,
            phone_number=phone_number,
            context=context,
            variables=variables,
        )

        return instance_fields
