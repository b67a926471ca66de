"""`mirrorspec serve`: Fabric's OneLake landing-zone endpoint on 127.0.0.1 (no JVM).

See docs/onelake.md. The command only resolves folders, names and TLS, then runs
`mirrorspec.serve.server.Endpoint` until SIGTERM/Ctrl-C.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from mirrorspec.commands.params import get_console, given_as, project_options
from mirrorspec.context.watch import stop_on_signals
from mirrorspec.base.errors import MirrorspecError

LOOPBACK_NAMES = ("localhost",)
_HOST_NAME = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?\.?")
DEFAULT_ENGINE_EVERY = 5.0  # seconds between engine passes of a startMirroring without --mirror-every


def _loopback(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if value in LOOPBACK_NAMES:
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(value).is_loopback and ipaddress.ip_address(value).version == 4:
            return value
    except ValueError:
        pass
    raise click.BadParameter(f"{value!r}: serve binds only an IPv4 loopback address (it accepts "
                             "any credential; see docs/security.md)")


def _host_names(_ctx: click.Context, _param: click.Parameter,
                value: tuple[str, ...]) -> tuple[str, ...]:
    for name in value:
        if not _HOST_NAME.fullmatch(name):
            raise click.BadParameter(f"{name!r} is not a host name (letters, digits, '-' and "
                                     "'.'; no port, no wildcard)")
    return tuple(name.lower().rstrip(".") for name in value)


def _folders(params: dict[str, Any]) -> tuple[Path, Path, str]:
    """(landing zone, warehouse, default name) from the options or the project's profile."""
    landing, warehouse = params["landing_zone"], params["warehouse"]
    if params["root"]:
        if landing or warehouse:
            raise MirrorspecError("give --root, or --landing-zone and --warehouse, not both")
        return Path(), Path(), "local"  # the item's folders under the root (_root_folders)
    if bool(landing) != bool(warehouse):
        raise MirrorspecError("give both --landing-zone and --warehouse, or neither (then the "
                              "project's profile names them)")
    name = "local"
    if not landing:
        from mirrorspec.compile import load_plan_context

        _require_project(params["project_dir"])
        plan = load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                                 params["profiles_dir"]).plan
        landing, warehouse, name = plan.landing_zone, plan.warehouse, plan.project_name
    for what, value in (("landing zone", landing), ("warehouse", warehouse)):
        if "://" in str(value):
            raise MirrorspecError(f"the {what} {value} is not a local folder: serve backs local "
                                  "folders only", hint="give --landing-zone/--warehouse folders")
    from mirrorspec.base.files import folders_overlap

    if folders_overlap(str(landing), str(warehouse)):
        raise MirrorspecError(f"the landing zone {landing} and the warehouse {warehouse} overlap: "
                              "a publisher could write Tables/ through Files/LandingZone",
                              hint="give --landing-zone and --warehouse folders apart, neither "
                                   "inside the other")
    return Path(landing).resolve(), Path(warehouse).resolve(), name


def _require_project(project_dir: str) -> None:
    """Outside a project, say the three ways to give serve its folders (not only the project's)."""
    from mirrorspec.base.errors import ProjectError
    from mirrorspec.base.origin import origin_of
    from mirrorspec.load.project import find_project_file

    try:
        find_project_file(Path(project_dir).expanduser().resolve(),
                          origin_of(project_dir, "--project-dir"))
    except ProjectError as exc:
        raise ProjectError(exc.message, hint="give the folders: --landing-zone DIR --warehouse "
                           "DIR (one mirrored database), or --root DIR (several, created "
                           "through /v1); or run serve in a project (--project-dir) to serve "
                           "its profile's folders") from None


def _report(params: dict[str, Any]) -> Path | None:
    """The --report file, its folder created (a folder that can't be is an error at start)."""
    if not params["report"]:
        return None
    report = Path(params["report"]).resolve()
    try:
        report.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MirrorspecError(f"--report {params['report']}: can't create its folder "
                              f"{report.parent}: {exc.strerror}",
                              hint="give a --report path in a folder you can write") from None
    return report


def _tls(params: dict[str, Any], temp: list[Path]):
    from mirrorspec.serve import tls
    from mirrorspec.serve.endpoints import certificate_names

    cert, key = params["cert"], params["key"]
    if bool(cert) != bool(key):
        raise MirrorspecError("give both --cert and --key")
    if cert and params["self_signed"]:
        raise MirrorspecError("give --cert/--key or --self-signed, not both")
    if params["self_signed"]:
        folder = Path(tempfile.mkdtemp(prefix="mirrorspec-serve-tls-"))
        temp.append(folder)
        chain, private, ca_file = tls.self_signed(
            folder, certificate_names(params["host"], params["allow_host"]))
        return tls.server_context(chain, private), ca_file
    if cert:
        return tls.server_context(Path(cert), Path(key)), Path(params["ca_file"] or cert)
    return None, None


@click.command("serve")
@project_options
@click.option("--landing-zone", type=click.Path(file_okay=False), default=None,
              help="The landing-zone folder behind Files/LandingZone (default: the profile's).")
@click.option("--warehouse", type=click.Path(file_okay=False), default=None,
              help="The warehouse folder behind Tables/ (default: the profile's).")
@click.option("--root", type=click.Path(file_okay=False), default=None,
              help="Host several mirrored databases (Fabric's /v1 API creates them), each with "
                   "its folders under this one.")
@click.option("--client", "clients", multiple=True, metavar="ID:SECRET|ID:@CERT.pem",
              envvar="MIRRORSPEC_SERVE_CLIENTS", show_envvar=True,
              help="An Entra ID application the token endpoint accepts (repeatable; default: "
                   "any id and secret). With it, the managed-identity routes serve only "
                   "--managed-identity identities.")
@click.option("--managed-identity", "identities", multiple=True, metavar="ID:SECRET",
              envvar="MIRRORSPEC_SERVE_MANAGED_IDENTITIES", show_envvar=True,
              help="A managed identity /msi/token issues tokens to, when the request proves "
                   "SECRET in X-IDENTITY-HEADER (App Service's IDENTITY_HEADER); repeatable. With "
                   "--client or this, the managed-identity routes issue no other token.")
@click.option("--host", default="127.0.0.1", show_default=True, callback=_loopback,
              help="Loopback address to bind (only loopback is allowed).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port (0: a free one, printed and in --ready-file).")
@click.option("--workspace", default=None, metavar="NAME[=GUID]",
              help="Workspace name (default: the project's name, or 'local').")
@click.option("--item", default=None, metavar="NAME[=GUID]",
              help="Mirrored database item name (default: the workspace name); addressed as "
                   "NAME.MountedRelationalDatabase or by GUID.")
@click.option("--cert", type=click.Path(dir_okay=False, exists=True), default=None,
              help="TLS certificate (chain) PEM.")
@click.option("--key", type=click.Path(dir_okay=False, exists=True), default=None,
              help="TLS private key PEM.")
@click.option("--ca-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="With --cert: the CA file clients should trust (for --ready-file).")
@click.option("--self-signed", is_flag=True,
              help="Make a CA and a certificate for 127.0.0.1/localhost and the Microsoft hosts "
                   "serve answers as an HTTPS proxy (needs trustme).")
@click.option("--unflushed", type=click.Choice(["visible", "hidden"]), default="visible",
              show_default=True,
              help="A created, not yet flushed file: a visible 0-byte file (as OneLake) or hidden.")
@click.option("--page-size", type=click.IntRange(1, 5000), default=5000, show_default=True,
              help="Most entries per listing page (small values exercise continuation).")
@click.option("--allow-host", multiple=True, metavar="NAME", callback=_host_names,
              help="Another name clients may send in Host (a proxy's, a hosts-file alias); "
                   "repeatable. 127.0.0.1, localhost and the real OneLake/Fabric names always "
                   "are.")
@click.option("--require-auth", is_flag=True,
              help="Answer 401 without a bearer token serve issued (for the service's audience), "
                   "a SharedKey signature or a SAS; 400 for another Authorization scheme.")
@click.option("--max-body", type=click.IntRange(1), default=4000 << 20, show_default=True,
              help="Largest request body in bytes (413 above).")
@click.option("--max-blob-size", type=click.IntRange(1), default=None,
              show_default="Azure's, 50,000 x 4,000 MiB",
              help="Largest blob a commit may write, in bytes (Put Block List, Put Blob, an "
                   "append or flush position); Azure's block-blob limit by default. A block "
                   "list over it, or over the disk's free space, gets 413.")
@click.option("--max-engines", type=click.IntRange(1), default=None, show_default="4",
              help="Most engines startMirroring (and --mirror-every) run at once; one more "
                   "gets 409 MirroringEngineLimitReached.")
@click.option("--mirror-every", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="Run `mirrorspec mirror --watch SECONDS` beside the endpoint (with --root: "
                   "the interval of the engines startMirroring starts).")
@click.option("--mirror-conf", multiple=True, metavar="KEY=VALUE",
              help="Spark conf for the --mirror-every process (repeatable).")
@click.option("--ready-file", type=click.Path(dir_okay=False), default=None,
              help="Write the URLs as JSON here once connections are accepted.")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Keep the publisher-conformance findings as JSON here.")
@click.option("--log-requests", is_flag=True, help="Log every request, not only refusals.")
def serve(**params: Any) -> None:
    """Serve the landing zone as Fabric's OneLake DFS/Blob endpoint, for any publisher."""
    from mirrorspec.serve import entra, managed_identity, services, supervise
    from mirrorspec.serve.blocks import MAX_BLOB_SIZE
    from mirrorspec.serve.items import DEFAULT_MAX_ENGINES
    from mirrorspec.serve import names as names_mod
    from mirrorspec.security.redact import redact_fields, redact_text
    from mirrorspec.serve.endpoints import served_hosts
    from mirrorspec.serve.items import EngineSettings, Registry
    from mirrorspec.serve.server import Config, Endpoint, write_ready_file

    console = get_console()
    params["max_blob_size"] = params["max_blob_size"] or MAX_BLOB_SIZE
    params["max_engines"] = params["max_engines"] or DEFAULT_MAX_ENGINES
    landing, warehouse, default_name = _folders(params)
    report = _report(params)
    try:
        workspace, workspace_id = names_mod.split_name(params["workspace"] or default_name,
                                                       "workspace")
        item, item_id = names_mod.split_name(params["item"] or workspace, "item")
        clients = entra.parse_clients(params["clients"])
        identities = managed_identity.parse_identities(params["identities"])
    except ValueError as exc:  # a value from MIRRORSPEC_SERVE_CLIENTS is said to come from it
        origin = given_as(click.get_current_context(), "clients") or "--client"
        raise MirrorspecError(str(exc).replace("--client", origin, 1)) from None

    def log(level: str, message: str, **fields: Any) -> None:  # credentials never written
        getattr(console, level if level in ("info", "warning", "error") else "info")(
            redact_text(message), **redact_fields(fields))

    root = Path(params["root"]).resolve() if params["root"] else None
    registry = Registry(root, EngineSettings(params["mirror_every"] or DEFAULT_ENGINE_EVERY,
                                             console.log_format, params["mirror_conf"],
                                             params["max_engines"]),
                        params["unflushed"], log, params["max_blob_size"])
    if root is not None:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MirrorspecError(f"can't create {root}: {exc.strerror}",
                                  hint="give a --root folder you can write") from None
        registry.load()
        landing, warehouse = registry.folders_of(workspace_id, item_id)
    for folder in (landing, warehouse):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MirrorspecError(f"can't create {folder}: {exc.strerror}",
                                  hint="give a folder you can write") from None
    temp: list[Path] = []
    ready = Path(params["ready_file"]).resolve() if params["ready_file"] else None
    if ready is not None:
        ready.unlink(missing_ok=True)  # left by a serve that was killed: not ready yet
    mirror = None
    try:
        context, ca_file = _tls(params, temp)
        config = Config(
            names=names_mod.Names(workspace, workspace_id, item, item_id), landing=landing,
            warehouse=warehouse, host=params["host"], port=params["port"],
            unflushed=params["unflushed"], page_size=params["page_size"],
            require_auth=params["require_auth"], max_body=params["max_body"],
            max_blob_size=params["max_blob_size"], tls=context,
            ca_file=ca_file, report=report, log_requests=params["log_requests"],
            allowed_hosts=served_hosts(params["host"], params["allow_host"]))

        if params["mirror_every"] and root is None:  # with --root, startMirroring starts them
            mirror = supervise.start_mirror(landing, warehouse, params["mirror_every"],
                                            console.log_format, params["mirror_conf"])
        endpoint = Endpoint(config, log)
        served = registry.adopt(f"{workspace}={workspace_id}", f"{item}={item_id}", landing,
                                warehouse, endpoint.store, endpoint.conformance)
        registry.open_all()
        registry.resume()  # the items whose mirroring was started before a restart
        services.attach(endpoint, registry, clients, identities)
        if mirror is not None:
            registry.adopt_engine(served, mirror)
            mirror = None  # the registry stops it (stopMirroring, or at the end)
        stop = stop_on_signals(console, "the requests in flight")
        endpoint.start()
        doc = {**endpoint.ready_doc(), "authority_host": endpoint.url,
               "fabric_api_url": endpoint.url + "/v1", "root": str(root) if root else None}
        console.result(f"OneLake endpoint: {endpoint.account_url}", **doc)
        console.info(f"landing zone: {endpoint.landing_zone_url} -> {landing}")
        console.info(f"workspace {workspace} = {workspace_id}; item {config.names.item_path} = "
                     f"{item_id}" + (f"; trust {ca_file}" if ca_file else ""))
        if ready:
            write_ready_file(ready, doc)
        while not stop.wait(0.5):
            registry.status(served)  # logs an engine that ended by itself, once
        if not endpoint.stop(grace=10.0):
            console.warning("requests still in flight after 10 s were cut off")
    finally:
        if mirror is not None:
            supervise.stop_mirror(mirror)
        registry.close()
        if ready is not None:
            ready.unlink(missing_ok=True)
        for folder in temp:
            shutil.rmtree(folder, ignore_errors=True)
    console.info("stopped")


COMMANDS = [serve]
