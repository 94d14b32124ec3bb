// CodeMirror language support by file extension, with each language's usual indentation
// (what Enter and Tab indent by): 4 spaces for Python (PEP 8) and Markdown, 2 for the web
// languages (the common style of JavaScript, TypeScript, HTML, CSS and JSON).
import { indentUnit } from "@codemirror/language";
import { python } from "@codemirror/lang-python";
import { javascript } from "@codemirror/lang-javascript";
import { html } from "@codemirror/lang-html";
import { css } from "@codemirror/lang-css";
import { markdown } from "@codemirror/lang-markdown";
import { json } from "@codemirror/lang-json";

const FOUR = "    ";
const TWO = "  ";

const BY_EXTENSION = {
  py: [() => python(), FOUR],
  pyi: [() => python(), FOUR],
  js: [() => javascript(), TWO],
  mjs: [() => javascript(), TWO],
  cjs: [() => javascript(), TWO],
  jsx: [() => javascript({ jsx: true }), TWO],
  ts: [() => javascript({ typescript: true }), TWO],
  tsx: [() => javascript({ typescript: true, jsx: true }), TWO],
  html: [() => html(), TWO],
  htm: [() => html(), TWO],
  css: [() => css(), TWO],
  md: [() => markdown(), FOUR],
  markdown: [() => markdown(), FOUR],
  json: [() => json(), TWO],
};

// The language of a file and its indentation; nothing for a file of another type (plain text,
// indented as CodeMirror does by default).
export function languageFor(path) {
  const name = path.split("/").pop();
  const dot = name.lastIndexOf(".");
  const known = dot > 0 ? BY_EXTENSION[name.slice(dot + 1).toLowerCase()] : undefined;
  if (!known) return [];
  const [make, unit] = known;
  return [make(), indentUnit.of(unit)];
}
