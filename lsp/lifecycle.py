"""The server's lifecycle and document events: initialize, initialized, shutdown, didChange, didSave,
watched files, configuration and workspace-folder changes.

None of them blocks: folders and settings are read at once, indexing and warm-up start in the
background (warm-up in worker threads, so the first completion does not pay for loading models).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from codectx.lsp import observe
from codectx.lsp.errors import UriRefused
from codectx.lsp.folders import Folder
from codectx.lsp.handlers import in_worker
from codectx.lsp.server import CodectxServer
from codectx.lsp.uris import uri_to_path
from lsprotocol import types

from codectx import workspace
from codectx.app.index import warm_lookups
from codectx.errors import CodectxError

log = logging.getLogger(__name__)


def _client_supports_watch_registration(server: CodectxServer) -> bool:
    caps = server.client_capabilities
    ws = caps.workspace if caps else None
    watched = ws.did_change_watched_files if ws else None
    return bool(watched and watched.dynamic_registration)


def _client_supports_configuration(server: CodectxServer) -> bool:
    caps = server.client_capabilities
    return bool(caps and caps.workspace and caps.workspace.configuration)


def too_broad(root: Path) -> str | None:
    """Why a folder the editor names is no workspace (codectx/workspace.py), or None: an editor
    opened on `~` or `/` made the server index the whole home or disk, and count every path on the
    machine as inside the workspace."""
    advice = "open a project folder (one holding .git, say) or add one to the workspace"
    return workspace.refusal(root, advice)


def _initial_folders(params: types.InitializeParams, refuse: Callable[[str], object]) -> list[Path]:
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
    kept = []
    for root in filter(Path.is_dir, roots):
        why = too_broad(root)
        if why is None:
            kept.append(root)
        else:
            refuse(why)
    return kept


def register(server: CodectxServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: CodectxServer, params: types.InitializeParams) -> None:
        """Reads folders and the editor's user-level settings; never blocks (no I/O beyond config files)."""
        if ls.log_bridge is not None:
            ls.log_bridge.attach(ls, asyncio.get_running_loop())
        ls.editor_settings = params.initialization_options
        for root in _initial_folders(params, ls.notices.once_ever):
            ls.workspaces.set_folder(root, ls.settings_for_root(root.resolve()))
        ls.default_settings = ls.settings_for_root(None)
        for folder in list(ls.workspaces.folders.values()):
            # An index already there opens now (in a worker) and starts loading into memory.
            asyncio.get_running_loop().create_task(in_worker(folder.keeper.prepare))

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

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CodectxServer, params: types.DidOpenTextDocumentParams) -> None:
        """An unindexed folder's first run indexes the open document's neighbourhood first."""
        found = _located(ls, params.text_document.uri)
        if found is not None:
            ls.workspaces.note_opened(found[0], found[1])

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CodectxServer, params: types.DidCloseTextDocumentParams) -> None:
        pass

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: CodectxServer, params: types.DidSaveTextDocumentParams) -> None:
        """Schedules a coalesced incremental reindex of the file's folder; returns at once."""
        found = _located(ls, params.text_document.uri)
        if found is not None:
            ls.workspaces.request_reindex(found[0], [found[1]])

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched(ls: CodectxServer, params: types.DidChangeWatchedFilesParams) -> None:
        """Schedules reindexing of the folders touched; files inside index folders are ignored."""
        touched: dict[Path, tuple[Folder, list[Path]]] = {}
        for change in params.changes:
            try:
                folder, path, _ = ls.workspaces.locate(change.uri)
            except UriRefused:
                continue
            try:
                index_dir: Path | None = folder.settings.index_dir()
            except CodectxError:  # refused (a workspace's link): nothing there is indexed anyway
                index_dir = None
            if index_dir is not None and (path == index_dir or index_dir in path.parents):
                continue
            if ".git" in path.parts:
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
            why = too_broad(root)
            if why is not None:
                ls.notices.once_ever(why)
            elif root.is_dir():
                folder = ls.workspaces.set_folder(root, ls.settings_for_root(root))
                if folder.settings.lsp.index_on_open:
                    ls.workspaces.request_reindex(folder)


async def _warm_up(ls: CodectxServer) -> None:
    """Load, in worker threads and in the order the first completion needs them, what it would
    otherwise pay seconds for: the index store (LanceDB's import, begun by `initialize`), then at
    once the tables its first lookups read (Arrow scans, off the interpreter lock) and the
    folder's session with its privacy gate's rules, then the heavy modules and the embedder."""
    settings = (
        next(iter(ls.workspaces.folders.values())).settings if ls.workspaces.folders else ls.default_settings
    )
    folders = list(ls.workspaces.folders.values())
    # The server's model name, stop ids and prompt room, asked now: the first completion would
    # otherwise ask them (~70 ms of round trips) after its context, on its critical path.
    asking = [asyncio.ensure_future(_ask_server(ls, f)) for f in folders if f.settings.backend.url]
    early: list[Folder] = []
    for folder in folders:
        if await in_worker(folder.keeper.answers_early):
            # The index's lookup files answer the first requests; the store opens after the
            # first of them (`prepare`, begun by `initialize`), and so do the heavy imports.
            early.append(folder)
            continue
        # An index already there opens now and starts loading into memory in the background;
        # requests are answered from index lookups meanwhile.
        await in_worker(folder.keeper.prepare)
    await asyncio.gather(*(_warm_folder(ls, folder) for folder in folders))
    if early:
        ls.warm = True  # the lookup files and the privacy gate are ready: answers come at once
        await asyncio.gather(*(in_worker(folder.keeper.prepare) for folder in early))
        await asyncio.gather(*(_warm_folder(ls, folder) for folder in early))
    await asyncio.gather(*asking)
    for problem in await in_worker(ls.embedders.warm_up, settings):
        log.warning("warm-up: %s", problem)
    ls.warm = True


async def _ask_server(ls: CodectxServer, folder: Folder) -> None:
    """The folder session's questions to the model server (no code is sent). A server that is
    down or refuses is only logged here; the circuit breaker keeps the failure, so the first
    completion reports it at once."""
    try:
        session = await in_worker(ls.session, folder)  # in a worker: the gate compiles its rules
        await session.ask_server()
    except Exception:
        log.info("warm-up: the model server was not asked", exc_info=True)


async def _warm_folder(ls: CodectxServer, folder: Folder) -> None:
    """One folder's index tables and privacy gate, read and compiled side by side."""
    jobs: dict[str, asyncio.Future[None]] = {}
    store = folder.store
    if store is not None:
        jobs["the index tables"] = asyncio.ensure_future(in_worker(warm_lookups, store))
    if folder.settings.backend.url:  # made in the worker: the gate compiles its rules with the session
        jobs["the privacy gate"] = asyncio.ensure_future(in_worker(lambda: ls.session(folder).warm_up_gate()))
    for name, job in jobs.items():
        try:
            await job
        except Exception:
            log.info("warm-up of %s failed", name, exc_info=True)


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


def _located(ls: CodectxServer, uri: str) -> tuple[Folder, Path] | None:
    """(folder, path) of a document in a workspace folder; None for one outside them (refused)."""
    try:
        folder, path, _rel = ls.workspaces.locate(uri)
    except UriRefused:
        return None
    return folder, path
