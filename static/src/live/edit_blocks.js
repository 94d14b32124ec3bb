// Splits a turn's streamed model output into prose and edit blocks, for the transcript only
// (the server parses for real). Tags count at line starts (PROTOCOL.md §4): <edit>, <write>,
// and SEARCH/REPLACE with the path on the prose line before. A partial line that may still
// become a tag is held back; any other text shows as soon as it arrives.
//
// feed(text) returns operations: {prose: text}, {open: {kind, path, pathFromProse}},
// {line: true} (one more body line), {close: true}.

const OPENING_TAG = /^<(edit|write)(?=[\s>/])([^>\n]*)>/;
const PATH_ATTR = /\bpath\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))/;
const SEARCH = "<<<<<<< SEARCH";
const REPLACE = ">>>>>>> REPLACE";
const MAX_TAG_LENGTH = 500;

function attributePath(attributes) {
  const found = PATH_ATTR.exec(attributes);
  return found ? found[1] ?? found[2] ?? found[3] : null;
}

export class EditBlockSplitter {
  constructor() {
    this.buffer = "";
    this.block = null; // null in prose, else "edit" | "write" | "search"
    this.atLineStart = true;
    this.section = null; // "old_text" | "new_text" inside an edit block
    this.afterNewText = false; // an </edit> right after </new_text> belongs to the block
    this.afterBlock = false;
  }

  feed(text) {
    this.buffer += text;
    const out = [];
    while (this.buffer && (this.block ? this.bodyStep(out, false) : this.proseStep(out, false)));
    return out;
  }

  // End of the turn: whatever is held back is final.
  finish() {
    const out = [];
    while (this.buffer && (this.block ? this.bodyStep(out, true) : this.proseStep(out, true)));
    if (this.block) out.push({ close: true });
    this.block = null;
    return out;
  }

  proseStep(out, final) {
    const newline = this.buffer.indexOf("\n");
    const complete = newline >= 0 || final;
    const line = newline >= 0 ? this.buffer.slice(0, newline) : this.buffer;
    if (this.atLineStart) {
      const opened = this.opening(line, complete);
      if (opened === "wait") return false;
      if (opened) {
        this.buffer = newline >= 0 ? this.buffer.slice(newline + 1) : "";
        this.block = opened.block;
        this.section = null;
        out.push({ open: opened });
        return true;
      }
      const trailing = this.afterBlock ? this.trailer(line.trim(), complete) : null;
      if (trailing === "wait") return false;
      if (trailing === "drop") {
        this.buffer = this.buffer.slice(line.length + 1);
        if (line.trim() === "```") this.afterBlock = false;
        this.afterNewText = false;
        return true;
      }
      if (line.trim()) this.afterBlock = false;
    }
    const taken = newline >= 0 ? this.buffer.slice(0, newline + 1) : this.buffer;
    this.buffer = this.buffer.slice(taken.length);
    this.atLineStart = newline >= 0;
    out.push({ prose: taken });
    return true;
  }

  // Right after a block, its optional </edit> and the code fence around it are not prose.
  trailer(text, complete) {
    const belongs = this.afterNewText ? ["</edit>", "```"] : ["```"];
    if (complete) return belongs.includes(text) ? "drop" : null;
    return belongs.some((marker) => marker.startsWith(text)) ? "wait" : null;
  }

  // {block, kind, path, pathFromProse} | "wait" | null
  opening(line, complete) {
    if (line.startsWith("<<") || line === "<") {
      if (!complete && SEARCH.startsWith(line)) return "wait";
      if (line.trimEnd() === SEARCH) return { block: "search", kind: "edit", path: null, pathFromProse: true };
    }
    if (!line.startsWith("<")) return null;
    if (!complete && ("<edit".startsWith(line) || "<write".startsWith(line))) return "wait";
    const tag = OPENING_TAG.exec(line);
    if (tag) {
      // Held until the line ends: the rest of the tag's line is not a body line.
      if (!complete) return "wait";
      return { block: tag[1], kind: tag[1], path: attributePath(tag[2]), pathFromProse: false };
    }
    if (!complete && /^<(edit|write)[\s/]/.test(line) && line.length < MAX_TAG_LENGTH) return "wait";
    return null;
  }

  bodyStep(out, final) {
    const newline = this.buffer.indexOf("\n");
    if (newline < 0 && !final) return false;
    const line = newline >= 0 ? this.buffer.slice(0, newline) : this.buffer;
    this.buffer = newline >= 0 ? this.buffer.slice(newline + 1) : "";
    if (this.closes(line)) {
      this.afterNewText = this.block === "edit" && line.includes("</new_text>");
      this.afterBlock = true;
      this.block = null;
      this.atLineStart = true;
      out.push({ close: true });
      return true;
    }
    // Only replacement lines count: what the block writes, not what it looks for.
    const section = /^\s*<(\/?)(old_text|new_text)\b/.exec(line);
    if (section) this.section = section[1] ? null : section[2];
    else if (this.block === "search" && line.trimEnd() === "=======") this.section = "new_text";
    else if (this.block === "write" || this.section === "new_text") out.push({ line: true });
    return true;
  }

  closes(line) {
    if (this.block === "write") return line.includes("</write>");
    if (this.block === "search") return line.trimEnd() === REPLACE;
    return line.includes("</new_text>") || line.trim() === "</edit>";
  }
}

// The path a SEARCH/REPLACE block names on the prose line(s) before it: returns the prose
// with that line (and a code fence) removed, and the path.
export function dropOpeningFence(prose) {
  return prose.replace(/(^|\n)```[^\n`]*\n\s*$/, "$1");
}

export function takePathLine(prose) {
  const lines = prose.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  let index = lines.length - 1;
  while (index >= 0 && !lines[index].trim()) index--;
  if (index >= 0 && lines[index].trim().startsWith("```")) index--;
  while (index >= 0 && !lines[index].trim()) index--;
  if (index < 0) return { prose, path: null };
  const candidate = lines[index].trim().replace(/^[`*]+|[`*]+$/g, "").replace(/:$/, "").replace(/^[`*]+|[`*]+$/g, "");
  if (!candidate || /\s/.test(candidate)) return { prose, path: null };
  const kept = lines.slice(0, index).join("\n");
  return { prose: kept ? kept + "\n" : "", path: candidate };
}
