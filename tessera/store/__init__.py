"""LanceDB storage: per-tenant chunk tables, publications, source blobs, locks."""
