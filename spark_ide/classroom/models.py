"""Courses (a teacher's template workspace, a join code and the AI rules) and the students
enrolled in them, each with a copy of the template."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from spark_ide.guard.modes import GuardMode
from spark_ide.live.policy import AiMode, AiRuns
from spark_ide.workspaces.models import GUARD_MODE_CHOICES, Workspace

# A course's AI modes as a form's choices (the modes are ``live.policy.AiMode``'s).
AI_MODE_CHOICES = [(mode.value, mode.word) for mode in AiMode]
# What the model may run, as a form's choices (``live.policy.AiRuns``: "code and tests", ...).
AI_RUNS_CHOICES = [(runs.value, runs.word) for runs in AiRuns]


class Course(models.Model):
    name = models.CharField(max_length=200)
    teacher = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="courses")
    # What students type or open (/join/<code>): random, unique, upper case.
    code = models.CharField(max_length=16, unique=True)
    template = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="courses")
    ai_mode = models.CharField(max_length=8, choices=AI_MODE_CHOICES, default=AiMode.ON.value)
    max_effort = models.CharField(max_length=8, blank=True)  # one of live.events.EFFORTS, or no cap
    token_quota = models.PositiveIntegerField(null=True, blank=True)  # per student; null: none
    # What a student's AI turns may cost in the course, US dollars (live.policy); null: no limit.
    budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    # Whether the model may run code in the students' copies: its run tool and the IDE's test rounds.
    ai_runs = models.CharField(max_length=8, choices=AI_RUNS_CHOICES, default=AiRuns.ALLOWED.value)
    # Whether a student's edit of the lines the model is writing steers it (live.edit_steer).
    ai_edit_steer = models.BooleanField(default=True)
    # The security watchdog's mode for every student's copy (it wins over the copy's own).
    guard_mode = models.CharField(max_length=8, choices=GUARD_MODE_CHOICES, default=GuardMode.HALT.value)
    # The catalogue's models the students' copies may run on (names; docs/models.md); empty: any.
    ai_models = models.JSONField(default=list, blank=True)
    archived = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class Enrollment(models.Model):
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="enrollments")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments")
    display_name = models.CharField(max_length=100)
    # The student's own copy of the template (deleting it ends the enrollment).
    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, related_name="enrollment")
    # path -> sha256 of the template's text the copy holds (at the copy, then at each push
    # that replaced it): a file whose text still hashes so is one the student has not changed.
    template_hashes = models.JSONField(default=dict)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["display_name", "id"]
        constraints = [models.UniqueConstraint(fields=["course", "student"], name="one_enrollment_per_student")]

    def __str__(self) -> str:
        return f"{self.display_name} in {self.course}"
