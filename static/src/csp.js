// The page's Content-Security-Policy nonce (spark_ide/security.py), rendered by base.html as
// <meta name="csp-nonce">. The policy allows no inline style but a <style> element with this
// nonce: CodeMirror writes its themes into one such element (EditorView.cspNonce), htmx its
// indicator styles into another (htmx.config.inlineStyleNonce).
import { EditorView } from "@codemirror/view";

export function cspNonce(doc = document) {
  const meta = doc.querySelector('meta[name="csp-nonce"]');
  return meta ? meta.content : "";
}

// The editor extension that gives CodeMirror the nonce (every EditorState of the page needs
// it: the first view decides how the style element is made).
export function editorNonce() {
  return EditorView.cspNonce.of(cspNonce());
}
