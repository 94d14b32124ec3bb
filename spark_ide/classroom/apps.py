from django.apps import AppConfig


class ClassroomConfig(AppConfig):
    name = "spark_ide.classroom"
    label = "classroom"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from spark_ide.pairing.ports import use_classroom
        from spark_ide.workspaces.ports import use_courses

        from .copies import Courses

        # The apps below this one ask of courses through these (they import nothing of ours).
        courses = Courses()
        use_courses(courses)
        use_classroom(courses)
