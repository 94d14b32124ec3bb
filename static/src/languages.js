// CodeMirror language support by file extension, and each language's usual indentation.
import { indentUnit } from "@codemirror/language";
import { python } from "@codemirror/lang-python";
import { javascript } from "@codemirror/lang-javascript";
import { html } from "@codemirror/lang-html";
import { css } from "@codemirror/lang-css";
import { markdown } from "@codemirror/lang-markdown";
import { json } from "@codemirror/lang-json";

const BY_EXTENSION = {
  py: () => python(),
  pyi: () => python(),
  js: () => javascript(),
  mjs: () => javascript(),
  cjs: () => javascript(),
  jsx: () => javascript({ jsx: true }),
  ts: () => javascript({ typescript: true }),
  tsx: () => javascript({ typescript: true, jsx: true }),
  html: () => html(),
  htm: () => html(),
  css: () => css(),
  md: () => markdown(),
  markdown: () => markdown(),
  json: () => json(),
};

// What a table says for a file's extension (lower-case; none for `Makefile`, `.env`, or a
// name such as `a.constructor`, which is no key of the table's own).
function byExtension(table, path) {
  const name = path.split("/").pop();
  const dot = name.lastIndexOf(".");
  const extension = dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
  return Object.hasOwn(table, extension) ? table[extension] : undefined;
}

export function languageFor(path) {
  const make = byExtension(BY_EXTENSION, path);
  return make ? make() : [];
}

// What Enter and Tab indent by, where the language's convention is not CodeMirror's default of
// 2 spaces (which JavaScript, TypeScript, HTML, CSS and JSON use): 4 for Python (PEP 8) and
// Markdown (a list item's body, an indented code block).
const INDENT_BY_EXTENSION = { py: 4, pyi: 4, md: 4, markdown: 4 };

export function indentationFor(path) {
  const width = byExtension(INDENT_BY_EXTENSION, path);
  return width ? indentUnit.of(" ".repeat(width)) : [];
}
