"""Per-language node tables for tree-sitter grammars: which node types define what.

Data only. A language is added by describing its node types here; the chunker
and the symbol extractor (through `grammar.classify`) need no new code.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LangSpec:
    functions: frozenset[str] = frozenset()  # function-like: their own chunk when they have a body
    classes: dict[str, str] = field(default_factory=dict)  # class-like node type -> kind
    containers: frozenset[str] = frozenset()  # class-likes whose members become chunks of their own
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


_C_IDENTS = frozenset({"identifier", "field_identifier", "type_identifier"})

SPECS: dict[str, LangSpec] = {
    "python": LangSpec(
        functions=frozenset({"function_definition"}),
        classes={"class_definition": "class"},
        containers=frozenset({"class_definition"}),
        wrappers=frozenset({"decorated_definition"}),
        constants=frozenset({"assignment", "expression_statement"}),
        comment_prefixes=("#",),
        python_docstring=True,
        chain_types=frozenset({"attribute"}),
        call_types=frozenset({"call"}),
    ),
    "javascript": LangSpec(
        functions=frozenset({"function_declaration", "generator_function_declaration", "method_definition"}),
        classes={"class_declaration": "class", "class": "class"},
        containers=frozenset({"class_declaration", "class"}),
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
        classes={"type_spec": "type"},
        wrappers=frozenset({"type_declaration"}),
        constants=frozenset({"const_declaration", "var_declaration"}),
        identifier_types=frozenset(
            {"identifier", "field_identifier", "type_identifier", "package_identifier"}
        ),
        chain_types=frozenset({"selector_expression", "qualified_type"}),
    ),
    "rust": LangSpec(
        functions=frozenset({"function_item"}),
        classes={
            "struct_item": "struct",
            "enum_item": "enum",
            "union_item": "struct",
            "trait_item": "trait",
            "impl_item": "impl",
            "mod_item": "module",
            "type_item": "type",
            "macro_definition": "macro",
        },
        containers=frozenset({"trait_item", "impl_item", "mod_item"}),
        signatures=frozenset({"function_signature_item"}),
        constants=frozenset({"const_item", "static_item"}),
        attribute_prefixes=("#[",),
        identifier_types=frozenset({"identifier", "field_identifier", "type_identifier"}),
        chain_types=frozenset({"field_expression", "scoped_identifier"}),
    ),
    "java": LangSpec(
        functions=frozenset({"method_declaration", "constructor_declaration"}),
        classes={
            "class_declaration": "class",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "record_declaration": "class",
            "annotation_type_declaration": "interface",
        },
        containers=frozenset(
            {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}
        ),
        attribute_prefixes=("@",),
        identifier_types=frozenset({"identifier", "type_identifier"}),
        chain_types=frozenset({"field_access", "scoped_identifier"}),
        call_types=frozenset({"method_invocation"}),
    ),
    "c": LangSpec(
        functions=frozenset({"function_definition"}),
        classes={"struct_specifier": "struct", "union_specifier": "struct", "enum_specifier": "enum"},
        constants=frozenset({"preproc_def", "preproc_function_def", "type_definition"}),
        identifier_types=_C_IDENTS,
        chain_types=frozenset({"field_expression"}),
    ),
    "cpp": LangSpec(
        functions=frozenset({"function_definition"}),
        classes={
            "class_specifier": "class",
            "struct_specifier": "struct",
            "union_specifier": "struct",
            "enum_specifier": "enum",
            "namespace_definition": "namespace",
        },
        containers=frozenset({"class_specifier", "struct_specifier"}),
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
        classes={
            "class_declaration": "class",
            "interface_declaration": "interface",
            "struct_declaration": "struct",
            "enum_declaration": "enum",
            "record_declaration": "class",
            "namespace_declaration": "namespace",
        },
        containers=frozenset(
            {"class_declaration", "interface_declaration", "struct_declaration", "record_declaration"}
        ),
        transparent=frozenset({"namespace_declaration"}),
        attribute_prefixes=("[",),
        chain_types=frozenset({"member_access_expression", "qualified_name"}),
        call_types=frozenset({"invocation_expression"}),
    ),
    "ruby": LangSpec(
        functions=frozenset({"method", "singleton_method"}),
        classes={"class": "class", "module": "module", "singleton_class": "class"},
        containers=frozenset({"class", "module", "singleton_class"}),
        comment_prefixes=("#",),
        identifier_types=frozenset({"identifier", "constant"}),
        chain_types=frozenset({"call", "scope_resolution"}),
        call_types=frozenset({"call"}),
    ),
    "php": LangSpec(
        functions=frozenset({"function_definition", "method_declaration"}),
        classes={
            "class_declaration": "class",
            "interface_declaration": "interface",
            "trait_declaration": "trait",
            "enum_declaration": "enum",
            "namespace_definition": "namespace",
        },
        containers=frozenset(
            {"class_declaration", "interface_declaration", "trait_declaration", "enum_declaration"}
        ),
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
        classes={"class_declaration": "class", "object_declaration": "class", "companion_object": "class"},
        containers=frozenset({"class_declaration", "object_declaration", "companion_object"}),
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
    classes={
        "class_declaration": "class",
        "class": "class",
        "abstract_class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "type_alias_declaration": "type",
        "internal_module": "module",
        "module": "module",
    },
    containers=frozenset(
        {"class_declaration", "class", "abstract_class_declaration", "internal_module", "module"}
    ),
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
