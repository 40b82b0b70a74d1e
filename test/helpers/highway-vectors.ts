// Google's published HighwayHash-256 golden values, shared by the highwayhasher
// test (test/src/highway.test.ts) and the native kernel test (highway-native.test.ts).
// google/highwayhash highwayhash_test.cc: key = 00 01 .. 1f (four LE u64 words
// 0x0706050403020100 ...), input of size n = bytes 00 01 .. n-1.
export const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
export const input = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => i));

// kExpected256[n] = four u64 result words; DESIGN §3: each little-endian, in order.
export const EXPECTED_256: Array<[number, [string, string, string, string]]> = [
  [0, ['DD44482AC2C874F5', 'D946017313C7351F', 'B3AEBECCB98714FF', '41DA233145751DF4']],
  [1, ['EDB941BCE45F8254', 'E20D44EF3DCAC60F', '72651B9BCB324A47', '2073624CB275E484']],
  [3, ['480AA0D70DD1D95C', '89225E7C6911D1D0', '8EA8426B8BBB865A', 'E23DFBC390E1C722']],
  [7, ['D666B1A00987AD81', 'A4F1F838EB8C6D37', 'E9226E07D463E030', '5754D67D062C526C']],
  [8, ['F1B905B0ED768BC0', 'E6976FF3FCFF3A45', '4FBE518DD9D09778', 'D9A0AFEB371E0D33']],
  [16, ['F51AD989A1B6CD1F', 'F7F075D62A627BD9', '7E01D5F579F28A06', '1AD415C16A174D9F']],
  [31, ['6880E276601A644D', 'B3728B20B10FB7DA', 'D0BD12060610D16E', '8AEF14EF33452EF2']],
  [32, ['BCE38C9039A1C3FE', '42D56326A3C11289', 'E35595F764FCAEA9', 'C9B03C6BC9475A99']],
  [33, ['F60115CBF034A6E5', '6C36EA75BFCE46D0', '3B17C8D382725990', '7EDAA2ED11007A35']],
  [63, ['F5B1F8266A3AEB67', '83B040BE4DEC1ADD', '7FE1C8635B26FBAE', 'F4A3A447DEFED79F']],
  [64, ['90D8E6FF6AC12475', '1A422A196EDAC1F2', '9E3765FE1F8EB002', 'C1BDD7C4C351CFBE']],
];
