// The Azure Java SDK publishing one open-mirroring table into a mirrored database's landing
// zone, as a service principal: azure-identity's ClientSecretCredential against the Entra ID
// authority host MS_AUTHORITY_HOST (serve's), azure-storage-file-datalake for the files.
// Steps: `_metadata.json`, then the data file uploaded under a `_`-prefixed temporary name and
// renamed to its sequence name. Public SDK calls only; one `STEP <name> ok|FAIL <why>` line each.

import com.azure.identity.ClientSecretCredential;
import com.azure.identity.ClientSecretCredentialBuilder;
import com.azure.storage.file.datalake.DataLakeDirectoryClient;
import com.azure.storage.file.datalake.DataLakeFileClient;
import com.azure.storage.file.datalake.DataLakeFileSystemClient;
import com.azure.storage.file.datalake.DataLakeServiceClientBuilder;

import java.nio.file.Path;

public final class PublishTable {
    interface Step { void run() throws Exception; }

    static int failures = 0;

    static void step(String name, Step body) {
        if (failures > 0) {
            System.out.println("STEP " + name + " FAIL an earlier step failed");
            return;
        }
        try {
            body.run();
            System.out.println("STEP " + name + " ok");
        } catch (Throwable e) {
            failures++;
            String why = String.valueOf(e).replace('\n', ' ');
            System.out.println("STEP " + name + " FAIL " + why.substring(0, Math.min(why.length(), 600)));
        }
        System.out.flush();
    }

    public static void main(String[] args) {
        String workspace = System.getenv("MS_WS");        // the workspace's GUID (the file system)
        String item = System.getenv("MS_ITEM");           // the mirrored database's GUID
        String table = System.getenv("MS_TABLE");         // e.g. sales.schema/orders
        Path src = Path.of(System.getenv("MS_SRC"));      // _metadata.json and data.parquet
        ClientSecretCredential credential = new ClientSecretCredentialBuilder()
            .authorityHost(System.getenv("MS_AUTHORITY_HOST"))
            .tenantId(System.getenv("MS_TENANT"))
            .clientId(System.getenv("MS_CLIENT_ID"))
            .clientSecret(System.getenv("MS_CLIENT_SECRET"))
            .disableInstanceDiscovery()  // the authority is not one of Microsoft's clouds
            .build();
        DataLakeFileSystemClient fs = new DataLakeServiceClientBuilder()
            .endpoint(System.getenv("MS_ACCOUNT_URL")).credential(credential).buildClient()
            .getFileSystemClient(workspace);
        String folder = item + "/Files/LandingZone/" + table;
        DataLakeDirectoryClient dir = fs.getDirectoryClient(folder);

        step("metadata", () -> {
            dir.createIfNotExists();
            dir.getFileClient("_metadata.json")
                .uploadFromFile(src.resolve("_metadata.json").toString(), true);
        });
        step("data-temp", () -> dir.getFileClient("_00000000000000000001.parquet.tmp")
            .uploadFromFile(src.resolve("data.parquet").toString(), true));
        step("data-rename", () -> {
            DataLakeFileClient temp = dir.getFileClient("_00000000000000000001.parquet.tmp");
            temp.rename(null, folder + "/00000000000000000001.parquet");
        });
        System.exit(failures == 0 ? 0 : 1);
    }
}
