// The Azure JS SDK (@azure/storage-file-datalake, @azure/storage-blob, @azure/identity's
// DefaultAzureCredential) running a mirroring publisher's everyday steps against the endpoint
// named by MS_ACCOUNT_URL. Public SDK calls only; one `STEP <name> ok|FAIL <why>` line per step.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { DataLakeServiceClient } = require("@azure/storage-file-datalake");
const { BlobServiceClient } = require("@azure/storage-blob");
const { DefaultAzureCredential } = require("@azure/identity");

let failures = 0;

async function step(name, body) {
  try {
    await body();
    console.log(`STEP ${name} ok`);
  } catch (e) {
    failures++;
    console.log(`STEP ${name} FAIL ${String(e && (e.stack || e)).replace(/\n/g, " ").slice(0, 400)}`);
  }
}

function check(ok, what) {
  if (!ok) throw new Error(what);
}

async function refusedWith(promise, codes) {
  try {
    await promise;
  } catch (e) {
    return codes.includes(e.statusCode);
  }
  return false;
}

async function main() {
  const url = process.env.MS_ACCOUNT_URL;
  const ws = process.env.MS_WS;
  const item = process.env.MS_ITEM;
  const src = process.env.MS_SRC;
  const listed = Number(process.env.MS_LISTED);
  const credential = new DefaultAzureCredential();
  const fsys = new DataLakeServiceClient(url, credential).getFileSystemClient(ws);
  const container = new BlobServiceClient(url, credential).getContainerClient(ws);
  const lz = `${item}/Files/LandingZone/${process.env.MS_CLIENT}.schema/`;
  const table = lz + "orders";
  const read = (name) => fs.readFileSync(path.join(src, name));
  const small = read("small.bin");
  const small2 = read("small2.bin");
  const dir = fsys.getDirectoryClient(table);

  await step("create-table", async () => {
    await dir.createIfNotExists();
    await dir.getFileClient("_metadata.json").upload(read("_metadata.json"));
  });
  await step("temp-rename", async () => {
    const temp = dir.getFileClient("_tmp.parquet");
    await temp.upload(small);
    await temp.move(`${table}/00000000000000000001.parquet`);
  });
  await step("list-paged", async () => {
    let paths = 0;
    for await (const page of fsys.listPaths({ path: lz + "big" }).byPage({ maxPageSize: 1000 })) {
      paths += page.pathItems.length;
    }
    let blobs = 0;
    for await (const page of container.listBlobsFlat({ prefix: lz + "big/" }).byPage({ maxPageSize: 1000 })) {
      blobs += page.segment.blobItems.length;
    }
    check(paths === listed && blobs === listed, `List Paths gave ${paths}, List Blobs ${blobs}, of ${listed}`);
  });
  const first = container.getBlockBlobClient(`${table}/00000000000000000001.parquet`);
  await step("read-full", async () => {
    check((await first.downloadToBuffer()).equals(small), "Get Blob bytes differ");
    const dfs = await dir.getFileClient("00000000000000000001.parquet").readToBuffer();
    check(dfs.equals(small), "Read Path bytes differ");
  });
  await step("read-range", async () => {
    const got = await first.downloadToBuffer(1000, 5000);
    check(got.equals(small.subarray(1000, 6000)), "the range's bytes differ");
  });
  await step("properties-metadata", async () => {
    await first.setMetadata({ stage: "published" });
    await first.setHTTPHeaders({ blobContentType: "application/vnd.apache.parquet" });
    const props = await first.getProperties();
    check(props.metadata.stage === "published", `metadata ${JSON.stringify(props.metadata)}`);
    check(props.contentType === "application/vnd.apache.parquet", `content type ${props.contentType}`);
    check(props.contentLength === small.length, `size ${props.contentLength}`);
    const dfs = await dir.getFileClient("00000000000000000001.parquet").getProperties();
    check(dfs.metadata.stage === "published", `DFS metadata ${JSON.stringify(dfs.metadata)}`);
  });
  const data = container.getBlockBlobClient(`${table}/data.csv`);
  await step("overwrite", async () => {
    await data.uploadData(small);
    await data.uploadData(small2);
  });
  await step("if-none-match", async () => {
    const refused = await refusedWith(
      data.upload(small, small.length, { conditions: { ifNoneMatch: "*" } }), [409, 412]);
    check(refused, "an upload with If-None-Match: * replaced an existing blob");
  });
  await step("upload-big", async () => {
    await dir.getFileClient("big.bin").uploadFile(path.join(src, "big.bin"));
  });
  await step("concurrent-16", async () => {
    await Promise.all([...Array(16).keys()].map((i) =>
      container.getBlockBlobClient(`${table}/c${String(i).padStart(2, "0")}.bin`).uploadData(small2)));
  });
  await step("lease", async () => {
    const lease = first.getBlobLeaseClient();
    await lease.acquireLease(-1);
    check(await refusedWith(first.setMetadata({ stage: "unleased" }), [412]),
      "a write without the lease ID went through");
    await lease.renewLease();
    await lease.releaseLease();
  });
  await step("delete-recursive", async () => {
    await container.getBlockBlobClient(`${lz}scratch/a/b.bin`).uploadData(small2);
    await container.getBlockBlobClient(`${lz}scratch/c.bin`).uploadData(small2);
    const scratch = fsys.getDirectoryClient(`${lz}scratch`);
    await scratch.delete(true);
    check(!(await scratch.exists()), "the folder is still there");
  });
  await step("monitoring", async () => {
    const body = await fsys.getFileClient(`${item}/Files/Monitoring/tables.json`).readToBuffer();
    check(body.toString("utf8").includes('"tables"'), `tables.json: ${body}`);
  });
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((e) => {
  console.log(`driver error: ${e && e.stack}`);
  process.exit(2);
});
