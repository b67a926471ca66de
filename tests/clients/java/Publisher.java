// The Azure Java SDK (azure-storage-file-datalake / azure-storage-blob, azure-identity's
// DefaultAzureCredential) running a mirroring publisher's everyday steps against the endpoint
// named by MS_ACCOUNT_URL. Public SDK calls only; one `STEP <name> ok|FAIL <why>` line per step.

import com.azure.core.util.BinaryData;
import com.azure.core.util.Context;
import com.azure.identity.DefaultAzureCredentialBuilder;
import com.azure.storage.blob.BlobClient;
import com.azure.storage.blob.BlobContainerClient;
import com.azure.storage.blob.BlobServiceClientBuilder;
import com.azure.storage.blob.models.BlobHttpHeaders;
import com.azure.storage.blob.models.BlobProperties;
import com.azure.storage.blob.models.BlobRange;
import com.azure.storage.blob.models.BlobStorageException;
import com.azure.storage.blob.models.ListBlobsOptions;
import com.azure.storage.blob.specialized.BlobLeaseClient;
import com.azure.storage.blob.specialized.BlobLeaseClientBuilder;
import com.azure.storage.file.datalake.DataLakeDirectoryClient;
import com.azure.storage.file.datalake.DataLakeFileClient;
import com.azure.storage.file.datalake.DataLakeFileSystemClient;
import com.azure.storage.file.datalake.DataLakeServiceClientBuilder;
import com.azure.storage.file.datalake.models.ListPathsOptions;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public final class Publisher {
    interface Step { void run() throws Exception; }

    static int failures = 0;

    static void step(String name, Step body) {
        try {
            body.run();
            System.out.println("STEP " + name + " ok");
        } catch (Throwable e) {
            failures++;
            String why = String.valueOf(e).replace('\n', ' ');
            System.out.println("STEP " + name + " FAIL " + why.substring(0, Math.min(why.length(), 400)));
        }
        System.out.flush();
    }

    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String url = System.getenv("MS_ACCOUNT_URL");
        String ws = System.getenv("MS_WS");
        String item = System.getenv("MS_ITEM");
        String client = System.getenv("MS_CLIENT");
        Path src = Path.of(System.getenv("MS_SRC"));
        int listed = Integer.parseInt(System.getenv("MS_LISTED"));
        var credential = new DefaultAzureCredentialBuilder().build();
        DataLakeFileSystemClient fs = new DataLakeServiceClientBuilder().endpoint(url)
            .credential(credential).buildClient().getFileSystemClient(ws);
        BlobContainerClient container = new BlobServiceClientBuilder().endpoint(url)
            .credential(credential).buildClient().getBlobContainerClient(ws);
        String lz = item + "/Files/LandingZone/" + client + ".schema/";
        String table = lz + "orders";
        byte[] small = Files.readAllBytes(src.resolve("small.bin"));
        byte[] small2 = Files.readAllBytes(src.resolve("small2.bin"));
        DataLakeDirectoryClient dir = fs.getDirectoryClient(table);

        step("create-table", () -> {
            dir.createIfNotExists();
            dir.getFileClient("_metadata.json").uploadFromFile(src.resolve("_metadata.json").toString(), true);
        });
        step("temp-rename", () -> {
            DataLakeFileClient temp = dir.getFileClient("_tmp.parquet");
            temp.uploadFromFile(src.resolve("small.bin").toString(), true);
            temp.rename(null, table + "/00000000000000000001.parquet");
        });
        step("list-paged", () -> {
            long paths = fs.listPaths(new ListPathsOptions().setPath(lz + "big").setMaxResults(1000), null)
                .stream().count();
            check(paths == listed, "List Paths gave " + paths + " of " + listed);
            long blobs = container.listBlobs(new ListBlobsOptions().setPrefix(lz + "big/")
                .setMaxResultsPerPage(1000), null).stream().count();
            check(blobs == listed, "List Blobs gave " + blobs + " of " + listed);
        });
        BlobClient first = container.getBlobClient(table + "/00000000000000000001.parquet");
        step("read-full", () -> {
            check(Arrays.equals(first.downloadContent().toBytes(), small), "Get Blob bytes differ");
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            dir.getFileClient("00000000000000000001.parquet").read(out);
            check(Arrays.equals(out.toByteArray(), small), "Read Path bytes differ");
        });
        step("read-range", () -> {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            first.downloadStreamWithResponse(out, new BlobRange(1000, 5000L), null, null, false, null,
                Context.NONE);
            check(Arrays.equals(out.toByteArray(), Arrays.copyOfRange(small, 1000, 6000)),
                "the range's bytes differ");
        });
        step("properties-metadata", () -> {
            first.setMetadata(Map.of("stage", "published"));
            first.setHttpHeaders(new BlobHttpHeaders().setContentType("application/vnd.apache.parquet"));
            BlobProperties props = first.getProperties();
            check("published".equals(props.getMetadata().get("stage")), "metadata " + props.getMetadata());
            check("application/vnd.apache.parquet".equals(props.getContentType()),
                "content type " + props.getContentType());
            check(props.getBlobSize() == small.length, "size " + props.getBlobSize());
            var dfs = dir.getFileClient("00000000000000000001.parquet").getProperties();
            check("published".equals(dfs.getMetadata().get("stage")), "DFS metadata " + dfs.getMetadata());
        });
        DataLakeFileClient data = dir.getFileClient("data.csv");
        step("overwrite", () -> {
            data.uploadFromFile(src.resolve("small.bin").toString(), true);
            data.uploadFromFile(src.resolve("small2.bin").toString(), true);
        });
        step("if-none-match", () -> {
            boolean refused = false;
            try {
                container.getBlobClient(table + "/data.csv").upload(BinaryData.fromBytes(small), false);
            } catch (BlobStorageException e) {
                refused = e.getStatusCode() == 409 || e.getStatusCode() == 412;
            }
            check(refused, "an upload without overwrite replaced an existing blob");
        });
        step("upload-big", () -> dir.getFileClient("big.bin").uploadFromFile(src.resolve("big.bin").toString(), true));
        step("concurrent-16", () -> {
            ExecutorService pool = Executors.newFixedThreadPool(16);
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                String name = String.format("%s/c%02d.bin", table, i);
                done.add(pool.submit(() -> container.getBlobClient(name).upload(BinaryData.fromBytes(small2), true)));
            }
            for (Future<?> f : done) f.get();
            pool.shutdown();
        });
        step("lease", () -> {
            BlobLeaseClient lease = new BlobLeaseClientBuilder().blobClient(first).buildClient();
            String id = lease.acquireLease(-1);
            boolean guarded = false;
            try {
                first.setMetadata(Map.of("stage", "unleased"));
            } catch (BlobStorageException e) {
                guarded = e.getStatusCode() == 412;
            }
            check(guarded, "a write without the lease ID went through");
            lease.renewLease();
            lease.releaseLease();
            check(id != null && !id.isEmpty(), "no lease ID");
        });
        step("delete-recursive", () -> {
            DataLakeDirectoryClient scratch = fs.getDirectoryClient(lz + "scratch");
            scratch.getSubdirectoryClient("a").getFileClient("b.bin").upload(BinaryData.fromBytes(small2), true);
            scratch.getFileClient("c.bin").upload(BinaryData.fromBytes(small2), true);
            scratch.deleteRecursively();
            check(!scratch.exists(), "the folder is still there");
        });
        step("monitoring", () -> {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            fs.getFileClient(item + "/Files/Monitoring/tables.json").read(out);
            check(out.toString(StandardCharsets.UTF_8).contains("\"tables\""), "tables.json: " + out);
        });
        System.exit(failures == 0 ? 0 : 1);
    }
}
