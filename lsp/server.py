"""The codectx language server object: the state every handler shares, in one place.

`CodectxServer` holds the editor's settings, the workspace folders (each with its
WorkspaceSession from codectx.app, which does the actual work), recent edits, request
history, health and notices. Handlers live in their own modules (lifecycle, completion,
inline, actions, commands, custom, health) and are wired by codectx.lsp.registry; a handler
gets the document from here, calls one session method and converts the answer back.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codectx.lsp.config import build_settings
from codectx.lsp.documents import RecentEdits, check_usable, too_large
from codectx.lsp.errors import UriRefused
from codectx.lsp.folders import Folder, Workspaces
from codectx.lsp.handlers import in_worker
from codectx.lsp.health import HEALTH_CHANGED, HealthMonitor
from codectx.lsp.history import History
from codectx.lsp.notices import Notices
from codectx.lsp.progress import ProgressReporter
from codectx.lsp.requests import PARSE_ERROR, CodectxProtocol
from codectx.lsp.uris import uri_to_path
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from codectx import __version__
from codectx.app.embedders import Embedders
from codectx.app.index import (
    AssembledContext,
    FileTooLarge,
    RecentRegion,
    UnknownFile,
    read_document,
    read_regular,
    recent_edit,
)
from codectx.app.session import WorkspaceSession
from codectx.logsafe import register_secret
from codectx.settings import Settings

if TYPE_CHECKING:  # only for the attributes' types: both are imported when the feature is on
    from codectx.backend.metrics import Metrics, MetricsEndpoint
    from codectx.lsp.logs import LspLogHandler

log = logging.getLogger(__name__)

RECENT_EDITS = 8  # recent edits in other files that context assembly considers


class CodectxServer(LanguageServer):
    """The server object handed to every handler: state shared across features."""

    def __init__(self, answers_dir: Path | None = None) -> None:
        super().__init__(
            "codectx",
            __version__,
            protocol_cls=CodectxProtocol,  # answers every request id (lsp/requests.py)
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.editor_settings: Any = None  # the editor's JSON, as it sent it
        self.folder_settings: dict[Path, Any] = {}
        self.recent = RecentEdits()
        self.notices = Notices(self.window_show_message)
        self.health = HealthMonitor(lambda payload: self.protocol.notify(HEALTH_CHANGED, payload))
        self.embedders = Embedders(before_first_load=_quiet_model_libraries)
        self.workspaces = Workspaces(
            ProgressReporter(self), self._index_error, self.embedders, open_files=self._open_files
        )
        self.default_settings: Settings = build_settings(None).settings
        self.warm = False  # heavy modules imported and the embedder loaded
        self._session_lock = threading.Lock()  # folder sessions are built in worker threads
        self.history = History()
        self.metrics: Metrics | None = None  # while lsp.metrics_port is set
        self.metrics_endpoint: MetricsEndpoint | None = None  # served when lsp.metrics_port is set
        self.log_bridge: LspLogHandler | None = None  # when logs go to the client
        self.answers_dir = answers_dir  # where explanations are written as documents (None: messages only)
        from codectx.lsp.suggest import Suggester

        self.suggester = Suggester(self)

    # --- settings ------------------------------------------------------------

    def settings_for_root(self, root: Path | None) -> Settings:
        result = build_settings(root, self.editor_settings, self.folder_settings.get(root) if root else None)
        register_secret(result.settings.backend.api_key)  # never in a log, whatever logs it
        for problem in result.problems:
            self.notices.once_ever(f"setting ignored: {problem}")
        return result.settings

    def refresh_settings(self) -> None:
        for root in list(self.workspaces.folders):
            self.workspaces.set_folder(root, self.settings_for_root(root))
        self.default_settings = self.settings_for_root(None)

    # --- documents -----------------------------------------------------------

    def document(self, uri: str) -> tuple[Folder, Path, str, str]:
        """(folder, abs path, relative path, current text) of an open or on-disk document."""
        folder, path, rel = self.workspaces.locate(uri)
        doc = self.workspace.text_documents.get(uri)
        if doc is not None:
            text = doc.source
        else:
            limit = folder.settings.lsp.max_document_bytes
            try:  # a pipe or device in the workspace is refused, not read (it would block)
                text = read_regular(path, limit).decode("utf-8", errors="replace")
            except FileTooLarge:
                raise too_large(limit) from None  # as for an open document that size
            except UnknownFile as exc:
                raise UriRefused(f"cannot read {exc}") from None
        check_usable(text, folder.settings.lsp.max_document_bytes)
        return folder, path, rel, text

    def _open_files(self) -> list[Path]:
        """The documents open in the editor, as paths (those that are files)."""
        out = []
        for uri in list(self.workspace.text_documents):
            try:
                out.append(uri_to_path(uri))
            except UriRefused:
                continue
        return out

    def open_text(self, folder: Folder, rel: str) -> str | None:
        """An open buffer's text for a workspace-relative path (what a retrieved chunk is scanned against)."""
        try:
            uri = (folder.root / rel).as_uri()
        except ValueError:
            return None
        doc = self.workspace.text_documents.get(uri)
        return doc.source if doc is not None else None

    def recent_edits(self, folder: Folder, uri: str) -> list[RecentRegion]:
        """The user's recent edits in other files of this folder, with a little code around each."""
        out: list[RecentRegion] = []
        for edit in self.recent.others(uri)[:RECENT_EDITS]:
            try:
                other, path, rel = self.workspaces.locate(edit.uri)
            except Exception:
                continue
            if other is not folder:
                continue
            doc = self.workspace.text_documents.get(edit.uri)
            try:
                text = doc.source if doc is not None else read_document(path)
            except UnknownFile:
                continue
            lines = text.split("\n")
            start, end = max(0, edit.start_line - 2), min(len(lines) - 1, edit.end_line + 2)
            out.append(recent_edit(rel, start, end, "\n".join(lines[start : end + 1])))
        return out

    # --- sessions ------------------------------------------------------------

    def session(self, folder: Folder) -> WorkspaceSession:
        """The folder's session (client, privacy gate, audit log, index), built on first use."""
        session = folder.session
        if session is not None:
            return session
        # Built in worker threads (the warm-up, a first request): one builds it, the other waits.
        with self._session_lock:
            if folder.session is None:
                settings = folder.settings
                folder.session = WorkspaceSession(
                    settings,
                    index=folder,
                    embedder=lambda: self.embedders.get_or_none(settings),
                    read_open=lambda rel: self.open_text(folder, rel),
                    # Searches keep the index in memory too: a small index (no background load)
                    # is read at the first search as at the first completion, so what a search
                    # answers does not depend on whether a completion came first.
                    preload_search=True,
                )
            return folder.session

    async def context(
        self, folder: Folder, uri: str, rel: str, text: str, line: int, column: int, *, answers: bool = True
    ) -> AssembledContext | None:
        """The folder session's context for a cursor, with recent edits, assembled in a worker
        thread. `answers=False`: the caller's answer needs more work after this (a completion's
        model request), and it tells the keeper itself when the answer is done."""
        recent = self.recent_edits(folder, uri)
        # The session is made in the worker too: its privacy gate compiles rules for ~0.5 s.
        session = self.session
        try:
            return await in_worker(lambda: session(folder).context(rel, text, line, column, recent=recent))
        finally:
            if answers:
                folder.keeper.note_answered()  # the folder's deferred first check may start now

    # --- reporting -----------------------------------------------------------

    def _index_error(self, message: str) -> None:
        self.notices.once("index", message, types.MessageType.Error)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls's report of a failure outside a request's answer: logged, never a popup per
        message (a broken client would send one per keystroke); a body that is not JSON is
        answered with ParseError, as JSON-RPC asks."""
        if isinstance(error, ValueError) and type(error).__name__ == "JSONDecodeError":
            protocol: CodectxProtocol = self.protocol  # type: ignore[assignment]
            protocol.answer_error(None, PARSE_ERROR, f"the message is not JSON: {error}")
            log.info("answered a message that is not JSON: %s", error)
            return
        log.warning("server error (%s): %s", getattr(source, "__name__", source), error)


def _quiet_model_libraries() -> None:
    from codectx.lsp.logs import quiet_libraries

    quiet_libraries()


__all__ = ["CodectxServer"]
