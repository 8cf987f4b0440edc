"""The codectx language server: construction, lifecycle, document and workspace events.

Feature handlers live in their own modules (completion, inline, actions,
commands, custom) and are registered here. Every handler is guarded: a
user error (CodectxError) becomes a JSON-RPC error with its message, any
other exception is logged and answered without taking the server down.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from codectx.lsp import observe
from codectx.lsp.config import build_settings
from codectx.lsp.documents import RecentEdits, check_usable
from codectx.lsp.errors import UriRefused
from codectx.lsp.health import HEALTH_CHANGED, HealthMonitor
from codectx.lsp.notices import Notices
from codectx.lsp.progress import ProgressReporter
from codectx.lsp.requests import INVALID_PARAMS, PARSE_ERROR, CodectxProtocol
from codectx.lsp.uris import uri_to_path
from codectx.lsp.workspace import Folder, Workspaces
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from codectx import __version__
from codectx.errors import CodectxError, UsageError
from codectx.logsafe import register_secret
from codectx.settings import Settings

log = logging.getLogger(__name__)

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed
T = TypeVar("T")


class CodectxServer(LanguageServer):
    """The server object handed to every handler: state shared across features."""

    def __init__(self, answers_dir: Path | None = None) -> None:
        super().__init__(
            "codectx",
            __version__,
            protocol_cls=CodectxProtocol,  # answers every request id (lsp/requests.py)
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.editor_settings: Any = None
        self.folder_settings: dict[Path, Any] = {}
        self.recent = RecentEdits()
        self.notices = Notices(self.window_show_message)
        self.health = HealthMonitor(lambda payload: self.protocol.notify(HEALTH_CHANGED, payload))
        self.workspaces = Workspaces(ProgressReporter(self), self._index_error)
        self.default_settings: Settings = build_settings(None).settings
        self.warm = False  # heavy modules imported and the embedder loaded
        self.history: Any = None  # codectx.lsp.history.History, set by register()
        self.metrics: Any = None  # codectx.backend.metrics.Metrics while lsp.metrics_port is set
        self.metrics_endpoint: Any = None  # served when lsp.metrics_port is set
        self.log_bridge: Any = None  # codectx.lsp.logs.LspLogHandler when logs go to the client
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
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                raise UriRefused(f"cannot read {path}: {exc.strerror}") from None
        check_usable(text, folder.settings.lsp.max_document_bytes)
        return folder, path, rel, text

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


def guarded(
    default: Callable[[], Any] | None = None,
) -> Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[T]]]:
    """Turn user errors into JSON-RPC errors, and crashes into a logged, survivable failure.

    With `default`, any failure answers `default()` instead of an error (for
    requests fired on every keystroke, where an error popup would be noise).
    """

    def wrap(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        @functools.wraps(fn)
        async def handler(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except asyncio.CancelledError:
                raise
            except JsonRpcException:
                raise
            except CodectxError as exc:
                log.info("%s: %s", fn.__name__, exc)
                if default is not None:
                    return default()
                code = INVALID_PARAMS if isinstance(exc, UsageError) else REQUEST_FAILED
                raise JsonRpcException(message=str(exc), code=code) from None
            except Exception as exc:
                log.exception("handler %s crashed", fn.__name__)
                if default is not None:
                    return default()
                raise JsonRpcException(
                    message=f"codectx internal error in {fn.__name__}: {type(exc).__name__}: {exc}",
                    code=REQUEST_FAILED,
                ) from None

        return handler

    return wrap


def _client_supports_watch_registration(server: CodectxServer) -> bool:
    caps = server.client_capabilities
    ws = caps.workspace if caps else None
    watched = ws.did_change_watched_files if ws else None
    return bool(watched and watched.dynamic_registration)


def _client_supports_configuration(server: CodectxServer) -> bool:
    caps = server.client_capabilities
    return bool(caps and caps.workspace and caps.workspace.configuration)


def _initial_folders(params: types.InitializeParams) -> list[Path]:
    roots: list[Path] = []
    uris = [f.uri for f in params.workspace_folders or []]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    if not uris and params.root_path:
        roots.append(Path(params.root_path))
    for uri in uris:
        try:
            roots.append(uri_to_path(uri))
        except UriRefused as exc:
            log.warning("workspace folder refused: %s", exc)
    return [r for r in roots if r.is_dir()]


def register_lifecycle(server: CodectxServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: CodectxServer, params: types.InitializeParams) -> None:
        """Reads folders and the editor's user-level settings; never blocks (no I/O beyond config files)."""
        if ls.log_bridge is not None:
            ls.log_bridge.attach(ls, asyncio.get_running_loop())
        ls.editor_settings = params.initialization_options
        for root in _initial_folders(params):
            ls.workspaces.set_folder(root, ls.settings_for_root(root.resolve()))
        ls.default_settings = ls.settings_for_root(None)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: CodectxServer, params: types.InitializedParams) -> None:
        """Pulls folder-scoped settings, registers watchers, starts background indexing. Non-blocking."""
        if _client_supports_configuration(ls):
            await _pull_folder_settings(ls)
        if _client_supports_watch_registration(ls):
            try:
                await ls.client_register_capability_async(
                    types.RegistrationParams(
                        registrations=[
                            types.Registration(
                                id="codectx-watch",
                                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                    watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
                                ),
                            )
                        ]
                    )
                )
            except Exception:
                log.warning("client refused file-watch registration; using the internal watcher")
                ls.workspaces.start_watcher(lambda f: float(f.settings.lsp.watch_interval_s))
        else:
            ls.workspaces.start_watcher(lambda f: float(f.settings.lsp.watch_interval_s))
        asyncio.get_running_loop().create_task(_warm_up(ls))
        observe.start_endpoint(ls)
        for folder in ls.workspaces.folders.values():
            if folder.settings.lsp.index_on_open:
                ls.workspaces.request_reindex(folder)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: CodectxServer, params: None) -> None:
        ls.workspaces.stop()
        observe.stop_endpoint(ls)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CodectxServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.recent.record(params)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CodectxServer, params: types.DidCloseTextDocumentParams) -> None:
        pass

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: CodectxServer, params: types.DidSaveTextDocumentParams) -> None:
        """Schedules a coalesced incremental reindex of the file's folder; returns at once."""
        try:
            folder, path, _ = ls.workspaces.locate(params.text_document.uri)
        except UriRefused:
            return
        ls.workspaces.request_reindex(folder, [path])

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched(ls: CodectxServer, params: types.DidChangeWatchedFilesParams) -> None:
        """Schedules reindexing of the folders touched; files inside index folders are ignored."""
        touched: dict[Path, tuple[Folder, list[Path]]] = {}
        for change in params.changes:
            try:
                folder, path, _ = ls.workspaces.locate(change.uri)
            except UriRefused:
                continue
            index_dir = folder.settings.index_dir()
            if path == index_dir or index_dir in path.parents or ".git" in path.parts:
                continue
            touched.setdefault(folder.root, (folder, []))[1].append(path)
        for folder, paths in touched.values():
            # A folder event (or many files at once) is cheaper as one incremental full pass.
            dirs = any(p.is_dir() for p in paths)
            ls.workspaces.request_reindex(folder, None if dirs or len(paths) > 50 else paths)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: CodectxServer, params: types.DidChangeConfigurationParams) -> None:
        """New user-level settings (the payload) and re-pulled folder settings; non-blocking."""
        if params.settings not in (None, {}):
            ls.editor_settings = params.settings
        if _client_supports_configuration(ls):
            await _pull_folder_settings(ls)
        ls.refresh_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(ls: CodectxServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for removed in params.event.removed:
            try:
                ls.workspaces.remove(uri_to_path(removed.uri))
            except UriRefused:
                pass
        for added in params.event.added:
            try:
                root = uri_to_path(added.uri).resolve()
            except UriRefused:
                continue
            if root.is_dir():
                folder = ls.workspaces.set_folder(root, ls.settings_for_root(root))
                if folder.settings.lsp.index_on_open:
                    ls.workspaces.request_reindex(folder)


async def _warm_up(ls: CodectxServer) -> None:
    from codectx.lsp.services import warm_up

    settings = (
        next(iter(ls.workspaces.folders.values())).settings if ls.workspaces.folders else ls.default_settings
    )
    loop = asyncio.get_running_loop()
    missing = await loop.run_in_executor(None, warm_up, settings)
    for problem in missing:
        log.warning("warm-up: %s", problem)
    # The privacy gate compiles its rules and loads its key on first use (about a second).
    from codectx.lsp.services import completion_service

    for folder in list(ls.workspaces.folders.values()):
        if not folder.settings.backend.url:
            continue
        try:
            gate = completion_service(ls, folder).client.gate
            await loop.run_in_executor(None, gate.prepare, "/v1/completions", {"prompt": "warm up"}, [])
        except Exception:
            log.info("warm-up of the privacy gate failed", exc_info=True)
    ls.warm = True


async def _pull_folder_settings(ls: CodectxServer) -> None:
    roots = list(ls.workspaces.folders)
    if not roots:
        return
    try:
        values = await asyncio.wait_for(
            ls.workspace_configuration_async(
                types.ConfigurationParams(
                    items=[types.ConfigurationItem(scope_uri=r.as_uri(), section="codectx") for r in roots]
                )
            ),
            timeout=5,
        )
    except Exception:
        log.info("workspace/configuration failed; using user-level settings only", exc_info=True)
        return
    for root, value in zip(roots, values or [], strict=False):
        ls.folder_settings[root] = value or None
    ls.refresh_settings()


def build_server(answers_dir: Path | None = None) -> CodectxServer:
    """The server with every feature registered; `answers_dir` defaults to the user's codectx cache."""
    from codectx.lsp import actions, commands, completion, custom, health, history, inline

    from codectx.settings import cache_dir

    server = CodectxServer(answers_dir if answers_dir is not None else cache_dir() / "answers")
    register_lifecycle(server)
    history.register(server)
    observe.register(server)
    completion.register(server)
    inline.register(server)
    actions.register(server)
    commands.register(server)
    custom.register(server)
    health.register(server)
    return server


def check_document(ls: CodectxServer, uri: str) -> None:
    """Raise the same refusal every feature gives for a document (bad URI, binary, huge)."""
    ls.document(uri)


__all__ = ["CodectxServer", "build_server", "check_usable", "guarded"]
