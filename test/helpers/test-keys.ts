/**
 * Key material the tests make for themselves: Ed25519 and P-256 key pairs, RSA keys, a throw-away
 * CA and the certificates it issues (built with pkijs), JWTs assembled by hand. Nothing here comes
 * from src/providers.
 */
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";

export const b64 = (bytes: ArrayBuffer | Uint8Array) => btoa(String.fromCharCode(...new Uint8Array(bytes)));
export const b64url = (bytes: ArrayBuffer | Uint8Array) => b64(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
export const hexOf = (bytes: ArrayBuffer | Uint8Array) => [...new Uint8Array(bytes)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
const utf8 = (text: string) => new TextEncoder().encode(text);

export async function ed25519Pair(): Promise<{ privateKey: CryptoKey; publicRaw: Uint8Array }> {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  return { privateKey: pair.privateKey, publicRaw: new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer) };
}

export async function ed25519Sign(key: CryptoKey, data: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key, utf8(data)));
}

export async function p256Pair(): Promise<{ privateKey: CryptoKey; publicSpki: Uint8Array }> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  return { privateKey: pair.privateKey, publicSpki: new Uint8Array((await crypto.subtle.exportKey("spki", pair.publicKey)) as ArrayBuffer) };
}

/** An ECDSA P-256 signature in DER, as SendGrid sends it (Web Crypto gives r‖s). */
export async function p256SignDer(key: CryptoKey, data: string): Promise<Uint8Array> {
  const raw = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, utf8(data)));
  const integer = (half: Uint8Array) => {
    let start = 0;
    while (start < half.length - 1 && half[start] === 0) start++;
    const trimmed = half.subarray(start);
    const padded = trimmed[0]! & 0x80 ? Uint8Array.of(0, ...trimmed) : trimmed;
    return [0x02, padded.length, ...padded];
  };
  const body = [...integer(raw.subarray(0, 32)), ...integer(raw.subarray(32))];
  return Uint8Array.of(0x30, body.length, ...body);
}

export async function rsaPair(hash: "SHA-1" | "SHA-256" = "SHA-256"): Promise<CryptoKeyPair> {
  return (await crypto.subtle.generateKey({ name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: Uint8Array.of(1, 0, 1), hash }, true, ["sign", "verify"])) as CryptoKeyPair;
}

/** The same private key, for signing with another hash (SNS's SignatureVersion 1 is SHA-1). */
export async function withHash(key: CryptoKey, hash: "SHA-1" | "SHA-256"): Promise<CryptoKey> {
  const pkcs8 = (await crypto.subtle.exportKey("pkcs8", key)) as ArrayBuffer;
  return crypto.subtle.importKey("pkcs8", pkcs8, { name: "RSASSA-PKCS1-v1_5", hash }, false, ["sign"]);
}

export async function rsaSign(key: CryptoKey, data: string | Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key, typeof data === "string" ? utf8(data) : data));
}

function name(commonName: string): pkijs.RelativeDistinguishedNames {
  return new pkijs.RelativeDistinguishedNames({ typesAndValues: [new pkijs.AttributeTypeAndValue({ type: "2.5.4.3", value: new asn1js.Utf8String({ value: commonName }) })] });
}

let serial = 1;

/** A certificate for `publicKey`, issued by `issuer` (its name and private key), valid from `notBefore` to `notAfter`. */
export async function certificate(options: { subject: string; publicKey: CryptoKey; issuer: string; issuerKey: CryptoKey; notBefore?: Date; notAfter?: Date }): Promise<string> {
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = new asn1js.Integer({ value: serial++ });
  cert.subject = name(options.subject);
  cert.issuer = name(options.issuer);
  cert.notBefore.value = options.notBefore ?? new Date(Date.now() - 86_400_000);
  cert.notAfter.value = options.notAfter ?? new Date(Date.now() + 86_400_000);
  await cert.subjectPublicKeyInfo.importKey(options.publicKey);
  await cert.sign(options.issuerKey, "SHA-256");
  const der = cert.toSchema(true).toBER(false);
  return `-----BEGIN CERTIFICATE-----\n${b64(der).replace(/(.{64})/g, "$1\n")}\n-----END CERTIFICATE-----\n`;
}

/** A throw-away CA and a leaf it issued for an RSA signing key. */
export async function throwAwayChain(): Promise<{ caPem: string; leafPem: string; signingKey: CryptoKey }> {
  const ca = await rsaPair();
  const leaf = await rsaPair();
  const caPem = await certificate({ subject: "Test Root CA", publicKey: ca.publicKey, issuer: "Test Root CA", issuerKey: ca.privateKey });
  const leafPem = await certificate({ subject: "sns.test", publicKey: leaf.publicKey, issuer: "Test Root CA", issuerKey: ca.privateKey });
  return { caPem, leafPem, signingKey: leaf.privateKey };
}

/** A compact JWT signed with RS256 (a private key) or HS256 (a secret), assembled here. */
export async function jwt(header: Record<string, unknown>, payload: Record<string, unknown>, key: CryptoKey | string): Promise<string> {
  const input = `${b64url(utf8(JSON.stringify(header)))}.${b64url(utf8(JSON.stringify(payload)))}`;
  let signature: ArrayBuffer;
  if (typeof key === "string") {
    const hmacKey = await crypto.subtle.importKey("raw", utf8(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    signature = await crypto.subtle.sign("HMAC", hmacKey, utf8(input));
  } else signature = await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key, utf8(input));
  return `${input}.${b64url(signature)}`;
}
