"""``/api/users/``: people and service accounts, the roles they hold, and tokens for service accounts. The services
decide every change (``accounts.services``: nobody changes their own roles, no role may be given that its giver
does not hold entirely, and any act on another user needs everything they may do)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.tokens import parse_lifetime

from .base import ApiView
from .errors import service_errors


class UserSerializer(serializers.Serializer):
    """A user as ``poolctl user list --format json`` shows it."""

    username = serializers.CharField()
    kind = serializers.CharField(help_text="person or service account")
    roles = serializers.ListField(child=serializers.CharField())
    superuser = serializers.BooleanField()
    active = serializers.BooleanField()
    signs_in_with = serializers.CharField()
    last_login = serializers.DateTimeField(allow_null=True)
    tokens = serializers.IntegerField(help_text="tokens that can still be used")


class UserListSerializer(serializers.Serializer):
    users = UserSerializer(many=True)


class UserCreateSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    service_account = serializers.BooleanField(default=False, help_text="a program: no password, tokens only")
    roles = serializers.ListField(child=serializers.CharField(max_length=128), default=list, max_length=100)
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class UserRolesSerializer(serializers.Serializer):
    roles = serializers.ListField(child=serializers.CharField(max_length=128), max_length=100)


class TokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=128)
    expires = serializers.CharField(default="30d", max_length=16, help_text="30d, 12h, 2w (at most a year)")

    def validate_expires(self, value: str):
        try:
            return parse_lifetime(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


class TokenSerializer(serializers.Serializer):
    name = serializers.CharField()
    user = serializers.CharField()
    token = serializers.CharField(help_text="shown once, in this response only")
    expires_at = serializers.DateTimeField()


def _validated(serializer_class, data) -> dict:
    request = serializer_class(data=data)
    request.is_valid(raise_exception=True)
    return request.validated_data


class UserView(ApiView, GenericAPIView):
    pagination_class = None
    filter_backends = []

    def shown(self, username: str) -> dict:
        with service_errors():
            return account_selectors.user_visible(principal=self.request.user, username=username)


class UserListView(UserView):
    """Users and service accounts: list, create."""

    doors = {"GET": "user.list", "POST": "user.create"}

    @extend_schema(summary="List users and service accounts", responses=UserListSerializer, operation_id="users_list")
    def get(self, request):
        return Response({"users": account_selectors.users_visible(principal=request.user)})

    @extend_schema(
        summary="Create a user or a service account",
        request=UserCreateSerializer,
        responses={201: UserSerializer},
        description="Needs `user:Update` on `user/<username>`; every role given must be one the caller holds "
        "entirely (no escalation).",
    )
    def post(self, request):
        options = _validated(UserCreateSerializer, request.data)
        with service_errors():
            user = account_services.user_create(principal=request.user, **options)
        return Response(self.shown(user.username), status=status.HTTP_201_CREATED)


class UserDetailView(UserView):
    doors = {"GET": "user.get"}

    @extend_schema(summary="Get a user", responses=UserSerializer)
    def get(self, request, username):
        return Response(self.shown(username))


class UserRolesView(UserView):
    doors = {"PUT": "user.roles"}

    @extend_schema(
        summary="Set the roles a user holds",
        request=UserRolesSerializer,
        responses=UserSerializer,
        description="Exactly these roles afterwards. Nobody changes their own roles; acting on another user needs "
        "everything they may do, and each role newly given must be one the caller holds entirely.",
    )
    def put(self, request, username):
        options = _validated(UserRolesSerializer, request.data)
        with service_errors():
            account_services.user_roles_set(principal=request.user, username=username, roles=options["roles"])
        return Response(self.shown(username))


class UserTokensView(UserView):
    doors = {"POST": "user.token"}

    @extend_schema(
        summary="Create a token for a user (a service account, typically)",
        request=TokenCreateSerializer,
        responses={201: TokenSerializer},
        description="The token acts as the user, so the caller must be able to do everything the user may (and be a "
        "superuser for a superuser's). It is shown once; the response is not cached (`Cache-Control: no-store`).",
    )
    def post(self, request, username):
        options = _validated(TokenCreateSerializer, request.data)
        with service_errors():
            token, secret = account_services.api_token_create_for(
                username=username, name=options["name"], lifetime=options["expires"], principal=request.user
            )
        body = {"name": token.name, "user": username, "token": secret, "expires_at": token.expires_at}
        response = Response(TokenSerializer(body).data, status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"
        return response
