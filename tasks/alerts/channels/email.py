"""The email channel: each run's alert as a plain-text message through an SMTP server (smtplib).

`starttls: true` (the default) upgrades the connection before anything is sent, verifying the server's
certificate against the system's CAs or `ssl_ca_file` (a private CA); `tls_verify: false` turns the
check off, only when written so. A server that does not offer STARTTLS is an error, never a silent
downgrade, and a password is never sent over a connection that is neither upgraded nor to this
machine. The password (and user name) come from the environment or a secret and are masked in every
error. Each message's `Message-ID` is derived from its outbox key, so a message sent twice after an
interrupted send is one conversation entry.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import formatdate, parseaddr
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from driftline.tasks.alerts.alert import Alert
from driftline.tasks.alerts.channels.base import (
    Channel,
    ChannelUnavailable,
    Credentials,
    DeliveryError,
    Posted,
    required_secret,
)
from driftline.tasks.alerts.channels.registry import register_channel
from driftline.tasks.alerts.config import LOOPBACK_HOSTS, ChannelConfig
from driftline.tasks.alerts.messages import clip

TIMEOUT_SECONDS = 10
SUBJECT_LIMIT = 200


def _address(value: str) -> str:
    """`value` when it is one plain address (`name@host`), else a `ValueError` (no header injection)."""
    if any(c in value for c in "\r\n,;") or "@" not in parseaddr(value)[1]:
        raise ValueError("must be one email address such as ml-team@example.com")
    return value


class EmailConfig(ChannelConfig):
    """`kind: email`: the SMTP server, sender, recipients and optional login."""

    kind: Literal["email"] = Field("email", description="`email`")
    smtp_host: str = Field(min_length=1, pattern=r"^[A-Za-z0-9.:\[\]-]+$", description="SMTP server host")
    smtp_port: int = Field(587, ge=1, le=65535, description="SMTP port (587: submission with STARTTLS)")
    sender: str = Field(alias="from", description="the From address")
    to: list[str] = Field(min_length=1, description="recipient addresses")
    starttls: bool = Field(True, description="upgrade the connection with STARTTLS before sending")
    ssl_ca_file: str | None = Field(
        None,
        min_length=1,
        description="PEM file of the CA(s) to trust for the server's certificate (a private CA)",
    )
    tls_verify: bool = Field(
        True, description="verify the server's certificate and host name; false only for a server you trust"
    )
    username_env: str | None = Field(None, description="environment variable with the SMTP user name")
    password_env: str | None = Field(None, description="environment variable with the SMTP password")
    password_block: str | None = Field(None, description="secret holding the SMTP password")

    @field_validator("to", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("sender")
    @classmethod
    def _sender(cls, value: str) -> str:
        return _address(value)

    @field_validator("to")
    @classmethod
    def _recipients(cls, value: list[str]) -> list[str]:
        return [_address(v) for v in value]

    @model_validator(mode="after")
    def _login_over_tls(self) -> EmailConfig:
        wants_login = bool(self.username_env or self.password_env or self.password_block)
        if wants_login and not self.starttls and self.smtp_host not in LOOPBACK_HOSTS:
            raise ValueError("a login needs `starttls: true` (the password would cross the network in clear)")
        if not self.starttls and (self.ssl_ca_file is not None or not self.tls_verify):
            raise ValueError("`ssl_ca_file` and `tls_verify` apply to STARTTLS: set `starttls: true`")
        return self


def tls_context(config: EmailConfig) -> ssl.SSLContext:
    """The context STARTTLS upgrades with: the system's CAs, or those of `ssl_ca_file`; no certificate
    check only when `tls_verify: false` is written. An unreadable CA file is `ChannelUnavailable`."""
    try:
        context = ssl.create_default_context(cafile=config.ssl_ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise ChannelUnavailable(
            f"cannot load ssl_ca_file {config.ssl_ca_file!r} of the SMTP server {config.smtp_host}: "
            f"{type(exc).__name__}: {exc.strerror or exc}"
        ) from None
    if not config.tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _problem(exc: BaseException, host: str) -> DeliveryError:
    """A `DeliveryError` saying what the SMTP exchange with `host` answered or why it failed."""
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return DeliveryError(f"the SMTP server {host} refused the login ({exc.smtp_code})", answered=True)
    if isinstance(exc, smtplib.SMTPNotSupportedError):
        what = str(exc).split(" extension", 1)[0]  # "STARTTLS extension not supported by server."
        needed = " (`starttls: true`): nothing was sent" if what == "STARTTLS" else ""
        return DeliveryError(f"the SMTP server {host} does not offer {what}{needed}", answered=True)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return DeliveryError(
            f"the SMTP server {host} presented a certificate that is not trusted ({exc.verify_message}): "
            "give its CA in `ssl_ca_file`",
            answered=True,
        )
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        refused = ", ".join(sorted(exc.recipients))
        return DeliveryError(f"the SMTP server {host} refused every recipient ({refused})", answered=True)
    if isinstance(exc, smtplib.SMTPResponseException):
        message = (
            exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else exc.smtp_error
        )
        transient = 400 <= exc.smtp_code < 500
        return DeliveryError(
            f"the SMTP server {host} answered {exc.smtp_code}: {clip(str(message), 300)}",
            affects_all=transient,
            answered=True,
        )
    answered = isinstance(exc, ConnectionRefusedError | socket.gaierror)
    return DeliveryError(
        f"cannot reach the SMTP server {host}: {type(exc).__name__}: {exc}", answered=answered
    )


@register_channel
class EmailChannel(Channel):
    """Sends each run's alert as a plain-text email."""

    kind = "email"
    config_model = EmailConfig
    config: EmailConfig

    def __init__(
        self,
        config: EmailConfig,
        *,
        username: str | None = None,
        password: str | None = None,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        self.destination = config.destination
        self.config = config
        self.secrets = tuple(s for s in (password, username) if s)
        self._login = (username or config.sender, password) if password else None
        self._timeout = timeout
        self._tls = tls_context(config) if config.starttls else None

    @classmethod
    def from_config(cls, config: ChannelConfig, credentials: Credentials) -> Channel:
        assert isinstance(config, EmailConfig)
        if not (config.password_env or config.password_block):
            return cls(config)
        password = required_secret(credentials, "SMTP password", config.password_env, config.password_block)
        username = credentials.get(config.username_env, None)
        return cls(config, username=username, password=password)

    @classmethod
    def render(cls, config: ChannelConfig | None, alert: Alert) -> dict[str, Any]:
        return {"subject": clip(f"[driftline] {alert.title}", SUBJECT_LIMIT), "text": alert.text}

    def _email(self, message: Mapping[str, Any], key: str | None) -> EmailMessage:
        email = EmailMessage()
        email["From"] = self.config.sender
        email["To"] = ", ".join(self.config.to)
        email["Subject"] = " ".join(str(message["subject"]).split())
        email["Date"] = formatdate(localtime=False)
        if key:
            email["Message-ID"] = f"<{key}@driftline>"
        email.set_content(str(message["text"]))
        return email

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        """One SMTP session: connect, STARTTLS when configured, log in when a password is set, send."""
        host = f"{self.config.smtp_host}:{self.config.smtp_port}"
        try:
            with smtplib.SMTP(self.config.smtp_host, self.config.smtp_port, timeout=self._timeout) as smtp:
                smtp.ehlo()
                if self._tls is not None:
                    smtp.starttls(context=self._tls)
                    smtp.ehlo()
                if self._login is not None:
                    smtp.login(*self._login)
                smtp.send_message(self._email(message, key))
        except (smtplib.SMTPException, OSError) as exc:
            raise self.redacted(_problem(exc, host)) from None
        return None
