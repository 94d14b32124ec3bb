"""The file tree shown in the sidebar, built from flat paths."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Node:
    name: str
    path: str
    is_dir: bool
    language: str = ""
    children: list[Node] = field(default_factory=list)


def build_tree(files: list[tuple[str, str]]) -> list[Node]:
    """Nest ``(path, language)`` pairs into folders; folders first, then files, by name."""
    root = Node(name="", path="", is_dir=True)
    folders: dict[str, Node] = {"": root}
    for path, language in sorted(files):
        parent = root
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder_path = "/".join(parts[:depth])
            folder = folders.get(folder_path)
            if folder is None:
                folder = Node(name=parts[depth - 1], path=folder_path, is_dir=True)
                folders[folder_path] = folder
                parent.children.append(folder)
            parent = folder
        parent.children.append(Node(name=parts[-1], path=path, is_dir=False, language=language))
    for folder in folders.values():
        folder.children.sort(key=lambda node: (not node.is_dir, node.name.lower()))
    return root.children
