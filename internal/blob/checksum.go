package blob

import "encoding/hex"

// FormatSHA256 renders a sha256 sum in the checksum form every backend reports:
// "sha256:<lowercase hex>".
func FormatSHA256(sum []byte) string {
	return "sha256:" + hex.EncodeToString(sum)
}
