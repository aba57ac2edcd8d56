"""Forms of the account pages."""

from django import forms

from .tokens import parse_lifetime

LIFETIME_CHOICES = [("7d", "7 days"), ("30d", "30 days"), ("90d", "90 days"), ("365d", "1 year")]


class ApiTokenCreateForm(forms.Form):
    """Name a new personal access token and choose how long it lives."""

    name = forms.CharField(max_length=128, help_text="What script or machine will use it.")
    lifetime = forms.ChoiceField(choices=LIFETIME_CHOICES, initial="30d", label="Expires after")

    def clean_lifetime(self):
        """The chosen lifetime as a duration."""
        return parse_lifetime(self.cleaned_data["lifetime"])
