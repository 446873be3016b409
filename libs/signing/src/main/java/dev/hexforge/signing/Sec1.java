package dev.hexforge.signing;

import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * SEC1 EC private keys (RFC 5915, {@code EC PRIVATE KEY}) rewrapped as PKCS#8 (RFC 5208), the one form Java's key
 * factory reads: the curve named in the SEC1 key's parameters becomes the algorithm identifier's parameter, and the
 * SEC1 structure itself the private key octets, as {@code openssl pkcs8 -topk8 -nocrypt} does.
 */
final class Sec1 {
    private static final int SEQUENCE = 0x30;
    private static final int OCTET_STRING = 0x04;
    private static final int INTEGER = 0x02;
    private static final int OID = 0x06;
    private static final int PARAMETERS = 0xA0;
    /** 1.2.840.10045.2.1, id-ecPublicKey. */
    private static final byte[] EC_PUBLIC_KEY = {OID, 7, 0x2A, (byte) 0x86, 0x48, (byte) 0xCE, 0x3D, 0x02, 0x01};

    private Sec1() {
    }

    static byte[] toPkcs8(byte[] sec1, Path pem) {
        try {
            Der key = Der.read(sec1, 0);
            if (key.tag != SEQUENCE || key.end != sec1.length) {
                throw new IllegalArgumentException("not a DER sequence");
            }
            Der version = Der.read(sec1, key.start);
            Der privateKey = Der.read(sec1, version.end);
            if (version.tag != INTEGER || privateKey.tag != OCTET_STRING) {
                throw new IllegalArgumentException("no version and private key");
            }
            byte[] curve = null;
            for (int at = privateKey.end; at < key.end; ) {
                Der field = Der.read(sec1, at);
                if (field.tag == PARAMETERS) {
                    Der oid = Der.read(sec1, field.start);
                    if (oid.tag == OID) {
                        curve = Arrays.copyOfRange(sec1, field.start, oid.end);
                    }
                }
                at = field.end;
            }
            if (curve == null) {
                throw new IllegalArgumentException("the key names no curve");
            }
            ByteArrayOutputStream algorithm = new ByteArrayOutputStream();
            algorithm.writeBytes(EC_PUBLIC_KEY);
            algorithm.writeBytes(curve);
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            body.writeBytes(new byte[]{INTEGER, 1, 0});
            body.writeBytes(Der.encode(SEQUENCE, algorithm.toByteArray()));
            body.writeBytes(Der.encode(OCTET_STRING, sec1));
            return Der.encode(SEQUENCE, body.toByteArray());
        } catch (IllegalArgumentException | ArrayIndexOutOfBoundsException e) {
            throw new SigningException(pem + ": not a SEC1 EC private key (" + e.getMessage() + ")", e);
        }
    }

    /** One DER element: its tag and where its content starts and the element ends. */
    private record Der(int tag, int start, int end) {
        static Der read(byte[] b, int at) {
            int tag = b[at] & 0xFF;
            int len = b[at + 1] & 0xFF;
            int start = at + 2;
            if (len > 0x80) {
                int n = len - 0x80;
                if (n > 3) {
                    throw new IllegalArgumentException("a DER length of " + n + " bytes");
                }
                len = 0;
                for (int i = 0; i < n; i++) {
                    len = len << 8 | (b[start + i] & 0xFF);
                }
                start += n;
            } else if (len == 0x80) {
                throw new IllegalArgumentException("an indefinite length, which DER does not allow");
            }
            if (start + len > b.length) {
                throw new IllegalArgumentException("an element runs past the end");
            }
            return new Der(tag, start, start + len);
        }

        static byte[] encode(int tag, byte[] content) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            out.write(tag);
            int n = content.length;
            if (n < 0x80) {
                out.write(n);
            } else if (n < 0x100) {
                out.write(0x81);
                out.write(n);
            } else {
                out.write(0x82);
                out.write(n >> 8);
                out.write(n & 0xFF);
            }
            out.writeBytes(content);
            return out.toByteArray();
        }
    }
}
