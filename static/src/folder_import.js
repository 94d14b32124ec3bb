// A folder upload sends each file with its path inside the folder (browsers keep only the
// base name in the multipart filename, so the paths travel as a parallel "paths" field).
export function wireFolderImport(form) {
  const picker = form.querySelector("input[type=file]");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData();
    data.append("csrfmiddlewaretoken", form.querySelector("[name=csrfmiddlewaretoken]").value);
    data.append("name", form.querySelector("[name=name]").value);
    for (const file of picker.files) {
      data.append("files", file);
      data.append("paths", file.webkitRelativePath || file.name);
    }
    const response = await fetch(form.action, { method: "POST", body: data });
    window.location.assign(response.url);
  });
}
