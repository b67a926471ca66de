// The Azure Go SDK (azdatalake, azblob, azidentity's DefaultAzureCredential) running a mirroring
// publisher's everyday steps against the endpoint named by MS_ACCOUNT_URL. Public SDK calls
// only; one `STEP <name> ok|FAIL <why>` line per step.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	blobservice "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azdatalake/file"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azdatalake/filesystem"
	dlservice "github.com/Azure/azure-sdk-for-go/sdk/storage/azdatalake/service"
)

var failures int

func step(name string, body func() error) {
	err := body()
	if err == nil {
		fmt.Printf("STEP %s ok\n", name)
		return
	}
	failures++
	why := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(why) > 400 {
		why = why[:400]
	}
	fmt.Printf("STEP %s FAIL %s\n", name, why)
}

func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func main() {
	ctx := context.Background()
	url, ws, item := os.Getenv("MS_ACCOUNT_URL"), os.Getenv("MS_WS"), os.Getenv("MS_ITEM")
	src := os.Getenv("MS_SRC")
	listed, _ := strconv.Atoi(os.Getenv("MS_LISTED"))
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		panic(err)
	}
	dl, err := dlservice.NewClient(url, cred, nil)
	if err != nil {
		panic(err)
	}
	bs, err := blobservice.NewClient(url, cred, nil)
	if err != nil {
		panic(err)
	}
	fs := dl.NewFileSystemClient(ws)
	cc := bs.NewContainerClient(ws)
	lz := item + "/Files/LandingZone/" + os.Getenv("MS_CLIENT") + ".schema/"
	table := lz + "orders"
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			panic(err)
		}
		return data
	}
	small, small2 := read("small.bin"), read("small2.bin")

	step("create-table", func() error {
		if _, err := fs.NewDirectoryClient(table).Create(ctx, nil); err != nil {
			return err
		}
		meta := fs.NewFileClient(table + "/_metadata.json")
		if _, err := meta.Create(ctx, nil); err != nil { // azdatalake's UploadBuffer appends to an existing file
			return err
		}
		return meta.UploadBuffer(ctx, read("_metadata.json"), nil)
	})
	step("temp-rename", func() error {
		temp := fs.NewFileClient(table + "/_tmp.parquet")
		if _, err := temp.Create(ctx, nil); err != nil {
			return err
		}
		if err := temp.UploadBuffer(ctx, small, nil); err != nil {
			return err
		}
		_, err := temp.Rename(ctx, table+"/00000000000000000001.parquet", nil)
		return err
	})
	step("list-paged", func() error {
		paths := 0
		pager := fs.NewListPathsPager(false, &filesystem.ListPathsOptions{Prefix: to.Ptr(lz + "big"), MaxResults: to.Ptr(int32(1000))})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return err
			}
			paths += len(page.Paths)
		}
		blobs := 0
		bp := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(lz + "big/"), MaxResults: to.Ptr(int32(1000))})
		for bp.More() {
			page, err := bp.NextPage(ctx)
			if err != nil {
				return err
			}
			blobs += len(page.Segment.BlobItems)
		}
		if paths != listed || blobs != listed {
			return fmt.Errorf("List Paths gave %d, List Blobs %d, of %d", paths, blobs, listed)
		}
		return nil
	})
	first := cc.NewBlobClient(table + "/00000000000000000001.parquet")
	step("read-full", func() error {
		got, err := first.DownloadStream(ctx, nil)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(got.Body)
		if err != nil {
			return err
		}
		if !bytes.Equal(data, small) {
			return errors.New("Get Blob bytes differ")
		}
		dfs, err := fs.NewFileClient(table+"/00000000000000000001.parquet").DownloadStream(ctx, nil)
		if err != nil {
			return err
		}
		data, err = io.ReadAll(dfs.Body)
		if err != nil {
			return err
		}
		if !bytes.Equal(data, small) {
			return errors.New("Read Path bytes differ")
		}
		return nil
	})
	step("read-range", func() error {
		got, err := fs.NewFileClient(table+"/00000000000000000001.parquet").DownloadStream(ctx,
			&file.DownloadStreamOptions{Range: &file.HTTPRange{Offset: 1000, Count: 5000}})
		if err != nil {
			return err
		}
		data, err := io.ReadAll(got.Body)
		if err != nil {
			return err
		}
		if !bytes.Equal(data, small[1000:6000]) {
			return errors.New("the range's bytes differ")
		}
		return nil
	})
	step("properties-metadata", func() error {
		if _, err := first.SetMetadata(ctx, map[string]*string{"stage": to.Ptr("published")}, nil); err != nil {
			return err
		}
		if _, err := first.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("application/vnd.apache.parquet")}, nil); err != nil {
			return err
		}
		props, err := first.GetProperties(ctx, nil)
		if err != nil {
			return err
		}
		stage := ""
		for k, v := range props.Metadata {
			if strings.EqualFold(k, "stage") && v != nil {
				stage = *v
			}
		}
		if stage != "published" || props.ContentType == nil || *props.ContentType != "application/vnd.apache.parquet" {
			return fmt.Errorf("metadata %v, content type %v", props.Metadata, props.ContentType)
		}
		if props.ContentLength == nil || *props.ContentLength != int64(len(small)) {
			return errors.New("wrong size")
		}
		return nil
	})
	data := cc.NewBlockBlobClient(table + "/data.csv")
	step("overwrite", func() error {
		if _, err := data.UploadBuffer(ctx, small, nil); err != nil {
			return err
		}
		_, err := data.UploadBuffer(ctx, small2, nil)
		return err
	})
	step("if-none-match", func() error {
		_, err := data.Upload(ctx, streamOf(small), &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}})
		if s := status(err); s != 409 && s != 412 {
			return fmt.Errorf("an upload with If-None-Match: * over an existing blob answered %v", err)
		}
		return nil
	})
	step("upload-big", func() error {
		f, err := os.Open(filepath.Join(src, "big.bin"))
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = cc.NewBlockBlobClient(table+"/big.bin").UploadFile(ctx, f, &blockblob.UploadFileOptions{BlockSize: 8 << 20, Concurrency: 4})
		return err
	})
	step("concurrent-16", func() error {
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, errs[i] = cc.NewBlockBlobClient(fmt.Sprintf("%s/c%02d.bin", table, i)).UploadBuffer(ctx, small2, nil)
			}(i)
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	step("lease", func() error {
		lc, err := lease.NewBlobClient(first, &lease.BlobClientOptions{LeaseID: to.Ptr("5a1e4b1e-0000-4000-8000-000000000001")})
		if err != nil {
			return err
		}
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			return err
		}
		_, err = first.SetMetadata(ctx, map[string]*string{"stage": to.Ptr("unleased")}, nil)
		if status(err) != 412 {
			return fmt.Errorf("a write without the lease ID answered %v", err)
		}
		if _, err := lc.RenewLease(ctx, nil); err != nil {
			return err
		}
		_, err = lc.ReleaseLease(ctx, nil)
		return err
	})
	step("delete-recursive", func() error {
		for _, name := range []string{"scratch/a/b.bin", "scratch/c.bin"} {
			if _, err := cc.NewBlockBlobClient(lz+name).UploadBuffer(ctx, small2, nil); err != nil {
				return err
			}
		}
		_, err := fs.NewDirectoryClient(lz+"scratch").Delete(ctx, nil)
		return err
	})
	step("monitoring", func() error {
		got, err := fs.NewFileClient(item+"/Files/Monitoring/tables.json").DownloadStream(ctx, nil)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(got.Body)
		if err != nil {
			return err
		}
		if !strings.Contains(string(body), `"tables"`) {
			return fmt.Errorf("tables.json: %s", body)
		}
		return nil
	})
	if failures > 0 {
		os.Exit(1)
	}
}

type readSeekCloser struct{ *bytes.Reader }

func (readSeekCloser) Close() error { return nil }

func streamOf(data []byte) io.ReadSeekCloser { return readSeekCloser{bytes.NewReader(data)} }
