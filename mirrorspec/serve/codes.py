"""Every refusal the endpoint answers, in one table: status code, x-ms-error-code, and whether
the pair is *guessed* (no real-OneLake ground truth; docs/onelake.md lists the guessed rows).

The non-guessed rows are ADLS Gen2 / Blob codes that the Azure SDKs, ABFS and the OneLake docs
name for the same situation (docs/onelake.md cites where each comes from).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    status: int
    code: str
    guessed: bool = False
    why: str = ""


# key → Code. Handlers refer to keys, never to bare numbers.
CODES: dict[str, Code] = {
    "path_not_found": Code(404, "PathNotFound"),
    "blob_not_found": Code(404, "BlobNotFound"),
    "filesystem_not_found": Code(404, "FilesystemNotFound"),
    "container_not_found": Code(404, "ContainerNotFound"),
    "source_not_found": Code(404, "SourcePathNotFound"),
    "path_exists": Code(409, "PathAlreadyExists"),
    "directory_not_empty": Code(409, "DirectoryNotEmpty"),
    # the Blob endpoint's name for it (Delete Blob of a non-empty directory on a hierarchical
    # namespace: Azure/azure-cli#20884, Azure/azure-storage-azcopy#2219)
    "directory_is_not_empty": Code(409, "DirectoryIsNotEmpty"),
    "path_conflict": Code(409, "PathConflict", why="a file where a directory is needed, or back"),
    "condition_not_met": Code(412, "ConditionNotMet"),
    "invalid_flush_position": Code(400, "InvalidFlushPosition"),
    "invalid_range": Code(416, "InvalidRange"),
    "body_too_large": Code(413, "RequestBodyTooLarge"),
    "invalid_input": Code(400, "InvalidInput"),
    "invalid_query": Code(400, "InvalidQueryParameterValue"),
    "invalid_header": Code(400, "InvalidHeaderValue"),
    "invalid_uri": Code(400, "InvalidUri"),
    "no_auth": Code(401, "NoAuthenticationInformation"),
    "invalid_auth": Code(401, "InvalidAuthenticationInfo",
                         why="--require-auth and a bearer token serve did not issue, expired, "
                             "or for another audience"),
    # an Authorization scheme storage does not read (`Basic …`): Azure's answer to one
    # (Azure/iothub-explorer#58, roapi/roapi#311: 400 "… not given in the correct format")
    "auth_format": Code(400, "InvalidAuthenticationInfo",
                        why="--require-auth and an Authorization scheme other than Bearer or "
                            "SharedKey"),
    "invalid_block_list": Code(400, "InvalidBlockList"),
    "internal_error": Code(500, "InternalError", why="a file-system error serve did not expect"),
    "container_exists": Code(409, "ContainerAlreadyExists"),
    "filesystem_exists": Code(409, "FilesystemAlreadyExists"),
    "invalid_metadata": Code(400, "InvalidMetadata"),
    "md5_mismatch": Code(400, "Md5Mismatch"),
    "block_list_too_long": Code(400, "BlockListTooLong"),
    "block_count": Code(409, "BlockCountExceedsLimit"),
    "copy_source_missing": Code(404, "CannotVerifyCopySource"),
    "out_of_range_md5": Code(400, "OutOfRangeInput"),
    # leases (Blob error codes; 409 for the lease operation, 412 for a write it guards)
    "lease_present": Code(409, "LeaseAlreadyPresent"),
    "lease_not_present": Code(409, "LeaseNotPresentWithLeaseOperation"),
    "lease_id_mismatch": Code(409, "LeaseIdMismatchWithLeaseOperation"),
    "lease_breaking": Code(409, "LeaseIsBreakingAndCannotBeAcquired"),
    "lease_breaking_change": Code(409, "LeaseIsBreakingAndCannotBeChanged"),
    "lease_broken": Code(409, "LeaseIsBrokenAndCannotBeRenewed"),
    "lease_id_missing": Code(412, "LeaseIdMissing"),
    "lease_mismatch_write": Code(412, "LeaseIdMismatchWithBlobOperation"),
    "lease_not_present_write": Code(412, "LeaseNotPresentWithBlobOperation"),
    # --- guessed: OneLake's docs say "rejected"/"not allowed" without a code (spec §6 R1) ----
    "invalid_name": Code(400, "InvalidResourceName", guessed=True,
                         why="a path holding '..', '.', '\\', NUL or another control character"),
    "invalid_source_uri": Code(400, "InvalidSourceUri", guessed=True,
                               why="a rename or copy source URL on another host"),
    "rename_parent_missing": Code(404, "RenameDestinationParentPathNotFound", guessed=True,
                                  why="ADLS's answer; whether OneLake creates the parent instead "
                                      "is unverified"),
    "read_only_area": Code(403, "OperationNotAllowedOnPath", guessed=True,
                           why="a write under Tables/ or Files/Monitoring/ (Fabric-managed)"),
    "managed_folder": Code(403, "OperationNotAllowedOnPath", guessed=True,
                           why="create/delete/rename of a workspace, item, Files, Tables, "
                               "Files/LandingZone or another folder outside the landing zone"),
    "acl_rejected": Code(400, "OperationNotSupportedOnOneLake", guessed=True,
                         why="setAccessControl(Recursive): 'Request rejected' per the docs"),
    "unknown_account": Code(400, "InvalidUri", guessed=True,
                            why="a path-style account other than 'onelake'"),
    "unsupported": Code(400, "UnsupportedOperation", guessed=True,
                        why="a DFS/Blob operation this endpoint does not emulate"),
    "item_not_found": Code(404, "PathNotFound", guessed=True,
                           why="an item name or GUID other than the served one"),
    "host_not_allowed": Code(403, "AuthorizationFailure", guessed=True,
                             why="a Host (or absolute request target) naming another server: "
                                 "DNS rebinding"),
    "cross_site": Code(403, "AuthorizationFailure", guessed=True,
                       why="a web page's request: Sec-Fetch-Site cross-site or same-site, or "
                           "an Origin other than the endpoint's own (CSRF)"),
    "blob_too_large": Code(413, "RequestBodyTooLarge", guessed=True,
                           why="a Put Block List whose blob would be over --max-blob-size or "
                               "over the disk's free space"),
}


def code(key: str) -> Code:
    """The Code of `key` (a KeyError is a bug in the caller)."""
    return CODES[key]


def guessed() -> dict[str, Code]:
    """The guessed rows (for docs/onelake.md and its test)."""
    return {k: c for k, c in CODES.items() if c.guessed}


class ServeError(Exception):
    """A refusal: `key` into CODES, a message for the client and the log."""

    def __init__(self, key: str, message: str, *, blob: str | None = None,
                 headers: dict[str, str] | None = None):
        self.key = key
        self.message = message
        self.headers = headers or {}
        # the Blob dialect's name for the same refusal (BlobNotFound for PathNotFound …)
        self.blob_key = blob
        super().__init__(message)

    def code_for(self, blob_dialect: bool) -> Code:
        return CODES[self.blob_key if blob_dialect and self.blob_key else self.key]
