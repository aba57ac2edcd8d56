"""``manage.py bootstrap``: demo data on a new database and a local admin, for ``make run``."""

from django.core.management.base import BaseCommand

from accounts.services import local_admin_ensure
from pools.services import demo_history_backfill, demo_install


class Command(BaseCommand):
    help = "Load the demo configuration on a new database and make sure a local admin can sign in."

    def add_arguments(self, parser):
        parser.add_argument("--no-demo", action="store_true", help="only create the local admin")

    def handle(self, *args, **options):
        if not options["no_demo"] and demo_install():
            self.stdout.write("Loaded the demo pools and synced their backends.")
            self.stdout.write("Recording a week of history for the demo's fleets (once; about 15 s)...")
            self.stdout.flush()
            moments = demo_history_backfill()
            self.stdout.write(f"Made a week of usage and utilization history for the demo ({moments} moments).")
        username, password = local_admin_ensure()
        self.stdout.write("")
        self.stdout.write("Sign in at http://127.0.0.1:8000/ (the Django admin is at /admin/)")
        if password:
            self.stdout.write(f"  username: {username}\n  password: {password}")
        else:
            self.stdout.write(
                f"  username: {username} (password unchanged; reset it with "
                f"'python manage.py changepassword {username}')"
            )
