package natsblob

import "encoding/base64"

// The bucket layout every Object Store client shares (NATS ADR-20). natsblob writes and
// reads chunks itself (see put.go and get.go), so it needs the names nats.go keeps
// unexported. Objects written here stay readable by any Object Store client.
const (
	chunkSize    = 128 << 10 // nats.go's default chunk size
	digestPrefix = "SHA-256="
)

// streamName is the stream holding a bucket.
func streamName(bucket string) string { return "OBJ_" + bucket }

// chunkSubject carries the chunks of one object version, named by its NUID.
func chunkSubject(bucket, nuid string) string { return "$O." + bucket + ".C." + nuid }

// chunkSubjects matches every chunk subject of a bucket.
func chunkSubjects(bucket string) string { return "$O." + bucket + ".C.>" }

// metaSubject carries the meta message (a JSON jetstream.ObjectInfo) of one object name.
// Only its last message counts; writers roll the subject up.
func metaSubject(bucket, name string) string {
	return "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}
