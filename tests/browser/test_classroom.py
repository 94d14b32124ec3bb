"""A classroom in real browsers: a teacher finds the classroom from the header and makes a course
on a workspace; a student without an account joins by its code with a name, lands on the file
in their copy and types; the student's page says "student", links the classroom and every
panel on it answers; the teacher's dashboard (htmx polling) shows them editing and their AI
turn as soon as it completes; watching their session lands on the file they work in."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import (
    ARTIFACTS,
    LIVE_WAIT_MS,
    IdeServer,
    create_file,
    failures,
    front,
    open_every_panel,
    open_new_workspace,
)

pytestmark = pytest.mark.browser


def test_teacher_dashboard_shows_a_students_live_edit(ide_server: IdeServer, page: Any, chromium: Any) -> None:
    teacher_bad = failures(page)
    open_new_workspace(ide_server, page, "class template", username="mrs-t")
    create_file(page, "main.py")
    ide_server.manage("spark_teacher", "mrs-t")
    page.goto(f"{ide_server.url}/")
    page.locator("header #classroom-link").click()  # found from the header, not from the docs
    page.wait_for_url("**/classroom/")
    page.get_by_label("Name").fill("Browser class")
    page.get_by_label("Template: one of your workspaces").select_option(label="class template")
    page.get_by_role("button", name="Create course").click()
    page.wait_for_url("**/classroom/*/")
    code = page.locator("#join-code").inner_text()
    page.locator("#students", has_text="No student has joined yet").wait_for()
    # The rules' drop-downs are drawn like the fields beside them (not the browser's bare ones).
    steer, budget = (page.locator(f"#policy [name={name}]").bounding_box() for name in ("ai_edit_steer", "budget_usd"))
    assert steer and budget and abs(steer["height"] - budget["height"]) <= 4, (steer, budget)

    context = chromium.new_context(viewport={"width": 1280, "height": 800})  # not signed in
    try:
        student = context.new_page()
        student_bad = failures(student)
        errors: list[str] = []
        student.on("pageerror", lambda exc: errors.append(str(exc)))
        student.goto(f"{ide_server.url}/join/")
        student.get_by_label("Course code").fill(code.lower())
        student.get_by_role("button", name="Continue").click()
        student.get_by_label("Your name").fill("Kim")
        student.get_by_role("button", name="Join").click()
        student.wait_for_url("**/sessions/*/")
        student.locator("#course-notice", has_text="Your teacher can see your prompts").wait_for()
        student.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
        assert student.locator("header .role-badge").inner_text() == "student"
        assert student.locator("header #classroom-link").is_visible()
        front(student, "main.py")  # the copy's file is open: no empty editor
        student.locator(".cm-content").click()
        student.keyboard.type("print('kim was here')")

        # The dashboard polls every 3 s: Kim appears, editing.
        row = page.locator("tr[data-student='Kim']")
        row.locator("[data-field=presence]", has_text="editing").wait_for(timeout=LIVE_WAIT_MS)

        # Kim asks the model; the AI-turn column says how it ended as soon as it has.
        box = student.get_by_label("Prompt")
        box.fill('[rate:2000][say]Done.\n<write path="notes.py">\nnote = 1\n</write>\n[/say]')
        box.press("Enter")
        student.locator(".turn .badge.outcome").first.wait_for(timeout=LIVE_WAIT_MS)
        row.locator("[data-field=turn]", has_text="completed").wait_for(timeout=LIVE_WAIT_MS)
        page.screenshot(path=str(ARTIFACTS / "classroom_dashboard.png"))
        open_every_panel(student)
        student.locator(".tab", has_text="main.py").click()  # back to main.py, where Kim types on
        student.locator(".cm-line", has_text="kim was here").click()
        student.keyboard.press("End")

        row.get_by_role("button", name="Watch").click()
        page.wait_for_url("**/sessions/*/")
        page.locator("[data-field=connection]", has_text="live").wait_for(timeout=LIVE_WAIT_MS)
        assert page.locator("header .role-badge").inner_text() == "teacher"
        front(page, "main.py")  # where Kim is, without a click
        page.locator(".cm-content", has_text="print('kim was here')").wait_for(timeout=LIVE_WAIT_MS)
        student.keyboard.type("\nx = 2")  # and keeps seeing it live
        page.locator(".cm-content", has_text="x = 2").wait_for(timeout=LIVE_WAIT_MS)
        open_every_panel(page)
        assert {"teacher": teacher_bad, "student": student_bad} == {"teacher": [], "student": []}
        assert errors == [], f"JavaScript errors on the student's page: {errors}"
    finally:
        context.close()
