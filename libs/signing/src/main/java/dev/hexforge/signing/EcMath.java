package dev.hexforge.signing;

import java.math.BigInteger;
import java.security.spec.ECFieldFp;
import java.security.spec.ECParameterSpec;
import java.security.spec.ECPoint;

/**
 * Scalar multiplication on a prime-field curve, only to derive a public key from a private one (the JDK offers no
 * API for it). Affine double-and-add; speed is irrelevant for one multiplication per signing.
 */
final class EcMath {
    private EcMath() {
    }

    static ECPoint multiply(ECParameterSpec params, BigInteger k) {
        BigInteger p = ((ECFieldFp) params.getCurve().getField()).getP();
        BigInteger a = params.getCurve().getA();
        ECPoint result = ECPoint.POINT_INFINITY;
        ECPoint addend = params.getGenerator();
        for (int i = 0; i < k.bitLength(); i++) {
            if (k.testBit(i)) {
                result = add(result, addend, a, p);
            }
            addend = add(addend, addend, a, p);
        }
        return result;
    }

    private static ECPoint add(ECPoint s, ECPoint t, BigInteger a, BigInteger p) {
        if (s.equals(ECPoint.POINT_INFINITY)) {
            return t;
        }
        if (t.equals(ECPoint.POINT_INFINITY)) {
            return s;
        }
        BigInteger lambda;
        if (s.getAffineX().equals(t.getAffineX())) {
            if (!s.getAffineY().equals(t.getAffineY()) || s.getAffineY().signum() == 0) {
                return ECPoint.POINT_INFINITY;
            }
            BigInteger x = s.getAffineX();
            lambda = x.pow(2).multiply(BigInteger.valueOf(3)).add(a)
                    .multiply(s.getAffineY().shiftLeft(1).modInverse(p)).mod(p);
        } else {
            lambda = t.getAffineY().subtract(s.getAffineY())
                    .multiply(t.getAffineX().subtract(s.getAffineX()).modInverse(p)).mod(p);
        }
        BigInteger x3 = lambda.pow(2).subtract(s.getAffineX()).subtract(t.getAffineX()).mod(p);
        BigInteger y3 = lambda.multiply(s.getAffineX().subtract(x3)).subtract(s.getAffineY()).mod(p);
        return new ECPoint(x3, y3);
    }
}
