"""Parsers: raw bytes -> ParsedDocument with an offset map, selected by content type."""

from tessera.parsing.base import Parser, get_parser, parser_for_path, register_parser

__all__ = ["Parser", "get_parser", "parser_for_path", "register_parser"]
