package dev.hexforge.contracts;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The token and device requests read strictly, each refusal naming its field. */
class ApiMessagesTest {
    static String refused(String json, Class<? extends DeviceMessages.Checked> type) {
        return assertThrows(IllegalArgumentException.class, () -> DeviceMessages.read(json, type)).getMessage();
    }

    @Test
    void aTokenRequestIsTwoOptionalPlainStrings() {
        assertEquals("token", DeviceMessages.read("{}", ApiMessages.NewToken.class).nameOrDefault());
        assertEquals(new ApiMessages.NewToken("alice", "ci"), DeviceMessages.read("{\"tenant\": \"alice\", \"name\": \"ci\"}",
                ApiMessages.NewToken.class));
        assertEquals("tenant: must be a string", refused("{\"tenant\": 5}", ApiMessages.NewToken.class));
        assertEquals("name: must be a string", refused("{\"name\": [1]}", ApiMessages.NewToken.class));
        assertEquals(true, refused("{\"role\": \"admin\"}", ApiMessages.NewToken.class).startsWith("role: unknown field"));
        assertEquals(true, refused("{\"name\": \"ci\\u202Etxt.exe\"}", ApiMessages.NewToken.class)
                .startsWith("name: must not contain control or invisible formatting characters"));
        assertEquals("name: must be 1-200 characters", refused("{\"name\": \"  \"}", ApiMessages.NewToken.class));
        assertEquals("the body must be one JSON value with nothing after it", refused("{} {}", ApiMessages.NewToken.class));
    }

    @Test
    void aDeviceRequestIsItsName() {
        assertEquals("phone-1", DeviceMessages.read("{\"name\": \"phone-1\"}", ApiMessages.NewDevice.class).name());
        assertEquals("name: a device name of 1-100 letters, digits, '.', '_' or '-'", refused("{}", ApiMessages.NewDevice.class));
        assertEquals("name: a device name of 1-100 letters, digits, '.', '_' or '-'", refused("{\"name\": \"a b\"}", ApiMessages.NewDevice.class));
        assertEquals("name: must be a string", refused("{\"name\": 7}", ApiMessages.NewDevice.class));
        assertEquals(true, refused("{\"name\": \"p\", \"soc\": \"x\"}", ApiMessages.NewDevice.class).startsWith("soc: unknown field"));
    }
}
