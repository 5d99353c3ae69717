package natsblob

import "encoding/base64"

// The bucket layout every Object Store client shares (NATS ADR-20). natsblob writes and
// reads chunks itself (see put.go and get.go), so it needs the names nats.go keeps
// unexported. Objects written here stay readable by any Object Store client.
const (
	// chunkSize is the size of the chunks Put writes; every object records its own, so
	// objects written with another size stay readable. It is twice nats.go's default
	// (natsChunkSize): per chunk a Put publishes a message and waits for its ack, and a
	// Get receives one, so larger chunks move the same bytes with half the messages.
	// Measured with BenchmarkPut and BenchmarkGet at 128 MiB on a separate nats-server,
	// 128 KiB vs 256 KiB chunks with the same bytes in flight: the CPU time of client
	// and server per MiB fell by about 4% for Put and stayed the same for Get, the
	// client's allocations per MiB halved, and wall-clock throughput was as fast or
	// faster; 512 KiB was no better. It stays well below nats-server's default
	// max_payload of 1 MiB; a server configured with less gets smaller chunks (fitChunk).
	chunkSize = 256 << 10
	// chunkHeadroom is what a chunk's message needs beside its data: subject, message
	// ID and the protocol's framing, with room to spare.
	chunkHeadroom = 4 << 10
	// minChunk is the smallest chunk fitChunk chooses.
	minChunk = 4 << 10
	// natsChunkSize is nats.go's default chunk size, which its Put uses when the
	// object's meta records none.
	natsChunkSize = 128 << 10
	digestPrefix  = "SHA-256="
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

// fitChunk is the chunk size for a server that takes messages of at most maxPayload
// bytes: chunkSize, or the largest power-of-two fraction of it whose message fits. A
// server configured below nats-server's default would otherwise refuse every chunk.
func fitChunk(maxPayload int64) int {
	size := chunkSize
	for size > minChunk && int64(size+chunkHeadroom) > maxPayload {
		size /= 2
	}
	return size
}
