"""Per-language node tables for tree-sitter grammars: which node types define what.

Data only. A language is added by describing its node types here; the chunker
and the symbol extractor (through `grammar.classify`) need no new code.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LangSpec:
    functions: frozenset[str] = frozenset()  # function-like: their own chunk when they have a body
    nesting: dict[str, str] = field(default_factory=dict)  # class-like node type -> kind, members chunked
    flat: dict[str, str] = field(default_factory=dict)  # the other class-likes -> kind (enums, aliases...)
    transparent: frozenset[str] = frozenset()  # namespaces: members chunked, no qualname scope
    wrappers: frozenset[str] = frozenset()  # decorators, export, template: look inside
    var_decls: frozenset[str] = frozenset()  # `const f = () => ...` declarations
    func_values: frozenset[str] = frozenset()  # values that make a variable a function
    assignments: frozenset[str] = frozenset()  # `a.b = function`, `{ key: function }`
    signatures: frozenset[str] = frozenset()  # bodiless declarations (interfaces, traits, overloads)
    constants: frozenset[str] = frozenset()  # module-level assignments worth a Definition
    comment_prefixes: tuple[str, ...] = ("//", "/*", "*")
    attribute_prefixes: tuple[str, ...] = ()  # lines skipped between a doc comment and its definition
    python_docstring: bool = False
    identifier_types: frozenset[str] = frozenset({"identifier"})
    chain_types: frozenset[str] = frozenset()  # attribute/member access nodes
    call_types: frozenset[str] = frozenset({"call_expression"})
    classes: dict[str, str] = field(init=False)  # every class-like node type -> kind
    containers: frozenset[str] = field(init=False)  # class-likes whose members become chunks of their own

    def __post_init__(self) -> None:
        # each class-like is named once, in `nesting` or `flat`; the chunker reads the union and the set
        object.__setattr__(self, "classes", {**self.nesting, **self.flat})
        object.__setattr__(self, "containers", frozenset(self.nesting))


_C_IDENTS = frozenset({"identifier", "field_identifier", "type_identifier"})
_CLASS_AND_INTERFACE = {"class_declaration": "class", "interface_declaration": "interface"}  # Java, C#, PHP

SPECS: dict[str, LangSpec] = {
    "python": LangSpec(
        functions=frozenset({"function_definition"}),
        nesting={"class_definition": "class"},
        wrappers=frozenset({"decorated_definition"}),
        constants=frozenset({"assignment", "expression_statement"}),
        comment_prefixes=("#",),
        python_docstring=True,
        chain_types=frozenset({"attribute"}),
        call_types=frozenset({"call"}),
    ),
    "javascript": LangSpec(
        functions=frozenset({"function_declaration", "generator_function_declaration", "method_definition"}),
        nesting={"class_declaration": "class", "class": "class"},
        wrappers=frozenset({"export_statement", "expression_statement"}),
        var_decls=frozenset({"lexical_declaration", "variable_declaration"}),
        func_values=frozenset({"arrow_function", "function_expression", "function", "generator_function"}),
        assignments=frozenset({"assignment_expression", "pair"}),
        identifier_types=frozenset(
            {
                "identifier",
                "property_identifier",
                "shorthand_property_identifier",
                "private_property_identifier",
            }
        ),
        chain_types=frozenset({"member_expression"}),
    ),
    "go": LangSpec(
        functions=frozenset({"function_declaration", "method_declaration"}),
        flat={"type_spec": "type"},
        wrappers=frozenset({"type_declaration"}),
        constants=frozenset({"const_declaration", "var_declaration"}),
        identifier_types=frozenset(
            {"identifier", "field_identifier", "type_identifier", "package_identifier"}
        ),
        chain_types=frozenset({"selector_expression", "qualified_type"}),
    ),
    "rust": LangSpec(
        functions=frozenset({"function_item"}),
        nesting={"trait_item": "trait", "impl_item": "impl", "mod_item": "module"},
        flat={
            "struct_item": "struct",
            "enum_item": "enum",
            "union_item": "struct",
            "type_item": "type",
            "macro_definition": "macro",
        },
        signatures=frozenset({"function_signature_item"}),
        constants=frozenset({"const_item", "static_item"}),
        attribute_prefixes=("#[",),
        identifier_types=frozenset({"identifier", "field_identifier", "type_identifier"}),
        chain_types=frozenset({"field_expression", "scoped_identifier"}),
    ),
    "java": LangSpec(
        functions=frozenset({"method_declaration", "constructor_declaration"}),
        nesting={**_CLASS_AND_INTERFACE, "enum_declaration": "enum", "record_declaration": "class"},
        flat={"annotation_type_declaration": "interface"},
        attribute_prefixes=("@",),
        identifier_types=frozenset({"identifier", "type_identifier"}),
        chain_types=frozenset({"field_access", "scoped_identifier"}),
        call_types=frozenset({"method_invocation"}),
    ),
    "c": LangSpec(
        functions=frozenset({"function_definition"}),
        flat={"struct_specifier": "struct", "union_specifier": "struct", "enum_specifier": "enum"},
        constants=frozenset({"preproc_def", "preproc_function_def", "type_definition"}),
        identifier_types=_C_IDENTS,
        chain_types=frozenset({"field_expression"}),
    ),
    "cpp": LangSpec(
        functions=frozenset({"function_definition"}),
        nesting={"class_specifier": "class", "struct_specifier": "struct"},
        flat={"union_specifier": "struct", "enum_specifier": "enum", "namespace_definition": "namespace"},
        transparent=frozenset({"namespace_definition", "linkage_specification"}),
        wrappers=frozenset({"template_declaration"}),
        constants=frozenset({"preproc_def", "preproc_function_def", "type_definition", "alias_declaration"}),
        identifier_types=_C_IDENTS | {"namespace_identifier"},
        chain_types=frozenset({"field_expression", "qualified_identifier"}),
    ),
    "csharp": LangSpec(
        functions=frozenset(
            {
                "method_declaration",
                "constructor_declaration",
                "local_function_statement",
                "destructor_declaration",
                "operator_declaration",
            }
        ),
        nesting={**_CLASS_AND_INTERFACE, "struct_declaration": "struct", "record_declaration": "class"},
        flat={"enum_declaration": "enum", "namespace_declaration": "namespace"},
        transparent=frozenset({"namespace_declaration"}),
        attribute_prefixes=("[",),
        chain_types=frozenset({"member_access_expression", "qualified_name"}),
        call_types=frozenset({"invocation_expression"}),
    ),
    "ruby": LangSpec(
        functions=frozenset({"method", "singleton_method"}),
        nesting={"class": "class", "module": "module", "singleton_class": "class"},
        comment_prefixes=("#",),
        identifier_types=frozenset({"identifier", "constant"}),
        chain_types=frozenset({"call", "scope_resolution"}),
        call_types=frozenset({"call"}),
    ),
    "php": LangSpec(
        functions=frozenset({"function_definition", "method_declaration"}),
        nesting={**_CLASS_AND_INTERFACE, "trait_declaration": "trait", "enum_declaration": "enum"},
        flat={"namespace_definition": "namespace"},
        transparent=frozenset({"namespace_definition"}),
        comment_prefixes=("//", "/*", "*", "#"),
        attribute_prefixes=("#[",),
        identifier_types=frozenset({"name"}),
        chain_types=frozenset({"member_access_expression", "scoped_call_expression", "qualified_name"}),
        call_types=frozenset(
            {"function_call_expression", "member_call_expression", "scoped_call_expression"}
        ),
    ),
    "kotlin": LangSpec(
        functions=frozenset({"function_declaration", "secondary_constructor"}),
        nesting={"class_declaration": "class", "object_declaration": "class", "companion_object": "class"},
        transparent=frozenset({"companion_object"}),
        attribute_prefixes=("@",),
        identifier_types=frozenset({"simple_identifier", "type_identifier"}),
        chain_types=frozenset({"navigation_expression"}),
    ),
    "bash": LangSpec(
        functions=frozenset({"function_definition"}),
        comment_prefixes=("#",),
        identifier_types=frozenset({"variable_name", "command_name"}),
        call_types=frozenset({"command"}),
    ),
}

_TS = LangSpec(
    functions=SPECS["javascript"].functions | {"function_signature"},
    nesting={
        "class_declaration": "class",
        "class": "class",
        "abstract_class_declaration": "class",
        "internal_module": "module",
        "module": "module",
    },
    flat={"interface_declaration": "interface", "enum_declaration": "enum", "type_alias_declaration": "type"},
    wrappers=frozenset({"export_statement", "ambient_declaration", "expression_statement"}),
    var_decls=SPECS["javascript"].var_decls,
    func_values=SPECS["javascript"].func_values,
    assignments=SPECS["javascript"].assignments,
    signatures=frozenset({"method_signature", "abstract_method_signature", "function_signature"}),
    attribute_prefixes=("@",),
    identifier_types=SPECS["javascript"].identifier_types | {"type_identifier"},
    chain_types=SPECS["javascript"].chain_types,
)
SPECS["typescript"] = _TS
SPECS["tsx"] = _TS
